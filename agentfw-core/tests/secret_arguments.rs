//! A credential passed as an argument is refused like one assigned (PR4, issue 18): builder
//! methods, setters, option functions, constructors, keyword and named arguments, and
//! headers set by a call, in the languages agents send each other. Each shape is tried as
//! an attack, and the pattern that refuses it is named; beside it, calls that only look
//! alike (a lookup by name, an environment read, a placeholder, a pagination or
//! idempotency key, a checksum in a header, a check of a password) must pass.
//! The values are made up.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use agentfw_core::policy::{RuleSet, RuleVerdict, Scanner, Stage};
use agentfw_core::time::Timestamp;

fn scanner() -> Scanner {
    Scanner::new(Arc::new(RuleSet::default_pack().expect("the default pack compiles")))
}

fn judge(scanner: &Scanner, text: &str) -> RuleVerdict {
    scanner.judge(text, Stage::Sending, 1, Timestamp::from_millis(1_700_000_000_000))
}

const CALL: &str = "token, secret or API key passed as a string literal to a call named after it";
const NAMED_KEY: &str = "value that looks random enough to be a secret, passed to a call whose name ends in KEY";
const PASSWORD: &str = "password passed as a string literal to a call named after it";
const BEARER: &str = "bearer / token credential in an Authorization header";
const HEADER: &str = "API key in an HTTP header";
const ASSIGNED: &str = "assigned a high-entropy value";

/// Each shape of the class, and a part of the description of the pattern that refuses it.
const ATTACKS: &[(&str, &str)] = &[
    ("let client = Client::builder()\n    .api_key(\"q8Zk3LmN9pR2tV5xB7cD4fG6hJ8k\")\n    .build()?;", CALL),
    ("let res = http.get(url).bearer_auth(\"Xk29fLq7Vb3nTz8RwY4mPc6JhD1s\").send().await?;", CALL),
    ("let res = http.get(url).bearer_auth(r#\"Xk29fLq7Vb3nTz8RwY4mPc6JhD1s\"#).send().await?;", CALL),
    ("AcmeClient c = AcmeClient.builder().setApiKey(\"Fz8Kq2Lm7Rt4Vx9Nb3Wc6Yh1Jd5P\").build();", CALL),
    ("client, err := acme.NewClient(ctx, option.WithAPIKey(\"Gq7Xm2Rk9Vb4Lt8Nz3Wc6Hy1Fd5J\"))", CALL),
    ("ts := oauth2.StaticTokenSource(option.WithToken(\"Hb3Nq8Lx2Vm7Rk4Tz9Wc6Jy1Fd5P\"))", CALL),
    ("var client = new OpenAIClient(new ApiKeyCredential(\"Jc4Rt9Mx2Lq7Vb8Nk3Wz6Hy1Fd5S\"));", CALL),
    ("var client = new SearchClient(endpoint, index, new AzureKeyCredential(\"Kd5Sv1Nx8Rq2Lm7Tb4Wz9Hy3Fc6J\"));", CALL),
    ("$client = (new ClientBuilder())->withToken('Lm6Tw2Ox9Sr3Kn8Vc5Xa1Jz7Hb4Q')->build();", CALL),
    ("client.setToken('Mn7Ux3Py1Ts4Lo9Wd6Yb2Ka8Ic5R');", CALL),
    ("creds := credentials.NewStaticCredentials(\"ci-bot\", \"pW3x9Lq7Vb2nTz8RkY4mAc6JhD1sFe5GuI0oN7tQ\", \"\")", CALL),
    ("config.setWeatherStationKey(\"Fq3Lm9Zx2Vk7Rb4Tn8Wc1Hy6JdE\");", NAMED_KEY),
    ("let http = reqwest::Client::new().get(url).basic_auth(\"deploy\", Some(\"Tr0ub4dor!x7Kq\"));", PASSWORD),
    ("req.SetBasicAuth(\"ci\", \"Wint3r#Qm9Lz2\")", PASSWORD),
    ("r = requests.get(url, auth=requests.auth.HTTPBasicAuth(\"svc\", \"Blu3Sky%Vn8Rw\"))", PASSWORD),
    (
        "DataSource ds = DataSourceBuilder.create().url(url).username(\"app\").password(\"Gr4nite&Kx7Pq2\").build();",
        PASSWORD,
    ),
    ("config.setDbPass(\"Qu4rtz*Hn3Zt6\");", PASSWORD),
    ("let req = client.get(url).header(\"Authorization\", \"Bearer Pq8Xz3Lm7Vb2Nk9Rt4Wc6Hy1Jd5F\");", BEARER),
    ("req.Header.Set(\"Authorization\", \"Bearer Rz9Ya4Mn8Wc3Ol1Su5Xd7Ik2Jf6G\")", BEARER),
    ("headers.insert(AUTHORIZATION, \"Bearer Sa1Zb5No9Xd4Pm2Tv6Ye8Jl3Kg7H\".parse()?);", BEARER),
    ("await request(app).get('/v1/items').set('X-Api-Key', 'Tb2Ac6Op1Ye5Qn3Uw7Zf9Km4Lh8I')", HEADER),
    // Keyword and named arguments are assignments already: the same class, other patterns.
    ("client = acme.Client(api_key=\"Uc3Bd7Pq2Zf6Ro4Vx8Ag1Ln5Mi9J\", timeout=30)", ASSIGNED),
    ("client = Octokit::Client.new(access_token: \"Vd4Ce8Qr3Ag7Sp5Wy9Bh2Mo6Nj1K\")", ASSIGNED),
    ("const client = new Client({ token: 'We5Df9Rs4Bh8Tq6Xz1Ci3Np7Ok2L' });", ASSIGNED),
    ("val client = AcmeClient(apiKey = \"Xf6Eg1St5Ci9Ur7Ya2Dj4Oq8Pl3M\")", ASSIGNED),
];

/// Calls and headers that look like the attacks and carry no credential.
const BENIGN: &[&str] = &[
    "let token = vault.getToken(\"github\")?;",
    "let key = secrets.get_secret(\"prod-db-credentials-v2\")?;",
    "password = keyring.get_password(\"acme-cli\", \"deploy\")",
    "let client = Client::builder().api_key(std::env::var(\"ACME_API_KEY\")?).build()?;",
    "let client = Client::builder().api_key(key).build()?;",
    "let client = Client::builder().api_key(\"<your-api-key>\").build()?;",
    "let client = Client::builder().api_key(\"sk-...\").build()?;",
    "AcmeClient c = AcmeClient.builder().setApiKey(System.getenv(\"ACME_API_KEY\")).build();",
    "client, err := acme.NewClient(ctx, option.WithToken(os.Getenv(\"ACME_TOKEN\")))",
    "req.setPageToken(\"CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA5bGZ0\");",
    "call.withIdempotencyKey(\"8f14e45f-ceea-467f-a0e6-a1c5b2e3d4f7\");",
    "cache.setCacheKey(\"9c1185a5c5e9fc54612808977ee8f548b2258d31\");",
    "verifier.setPublicKey(\"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEq3Lz9Vx\");",
    "req.Header.Set(\"If-None-Match\", \"33a64df551425fcc55e4d42a148795d9f25f89d4\")",
    "await request(app).get('/v1/items').set('If-None-Match', 'W/0815a8b6c2f4d9e7a1b3c5d7e9f2a4b6')",
    "assert!(hash_password(\"Tr0ub4dor!x7Kq\").starts_with(\"$argon2id$\"));",
    "assert user.check_password(\"Wint3r#Qm9Lz2\")",
    "let t = Token(\"IDENTIFIER_LIST\");",
    "let res = http.get(url).bearer_auth(&token).send().await?;",
    "let res = http.get(url).basic_auth(\"deploy\", Some(&password)).send().await?;",
    "client.auth(\"user\", \"pass\")",
    "t.Run(\"token is refreshed before it expires\", func(t *testing.T) { /* … */ })",
    "sha := checksum(\"3f4e2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f\")",
];

#[test]
fn a_credential_passed_as_an_argument_is_refused_by_its_pattern() {
    let scanner = scanner();
    let mut wrong = Vec::new();
    for (text, pattern) in ATTACKS {
        match judge(&scanner, text) {
            RuleVerdict::Deny { reason, .. } if reason.contains(pattern) => {}
            other => wrong.push(format!("{text}\n  want a refusal naming {pattern:?}, got {other:?}")),
        }
    }
    assert!(wrong.is_empty(), "{} of {}:\n{}", wrong.len(), ATTACKS.len(), wrong.join("\n"));
}

#[test]
fn calls_that_only_look_like_credentials_pass() {
    let scanner = scanner();
    let refused: Vec<_> = BENIGN
        .iter()
        .map(|text| (text, judge(&scanner, text)))
        .filter(|(_, verdict)| verdict.is_deny())
        .map(|(text, verdict)| format!("{text}: {verdict:?}"))
        .collect();
    assert!(refused.is_empty(), "{} of {} refused:\n{}", refused.len(), BENIGN.len(), refused.join("\n"));
}
