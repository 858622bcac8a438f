"""Valid-format secrets made at random: provider tokens (with their checksums where the
provider defines one), private keys in every serialisation, and generic credentials.

Every generator is written from the provider's own description of its format, not from
agentfw's patterns, so the evaluation can find a pattern that is wrong. Nothing here is a
real credential: every random part comes from the caller's seeded `random.Random`.
"""
import base64
import binascii
import hashlib
import json
import string

DIG = string.digits
UP = string.ascii_uppercase
LOW = string.ascii_lowercase
ALNUM = string.ascii_letters + DIG
UPNUM = UP + DIG
LOWNUM = LOW + DIG
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
BASE62 = DIG + UP + LOW
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


class Gen:
    def __init__(self, rng):
        self.rng = rng

    def s(self, cs, n):
        return "".join(self.rng.choice(cs) for _ in range(n))

    def raw(self, n):
        return bytes(self.rng.getrandbits(8) for _ in range(n))

    def uuid(self):
        h = self.s(HEX, 32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{self.rng.choice('89ab')}{h[17:20]}-{h[20:]}"

    def b64(self, n, url=False, pad=True):
        e = base64.urlsafe_b64encode(self.raw(n)) if url else base64.b64encode(self.raw(n))
        e = e.decode()
        return e if pad else e.rstrip("=")

    # ------------------------------------------------------------ checksummed formats
    def github_style(self, prefix):
        """GitHub and npm: 30 base62 characters and their CRC-32 in 6 base62 digits."""
        entropy = self.s(BASE62, 30)
        n = binascii.crc32(entropy.encode())
        digits = ""
        for _ in range(6):
            digits = BASE62[n % 62] + digits
            n //= 62
        return prefix + entropy + digits

    def grafana_sa(self):
        key = "glsa_" + self.s(ALNUM, 32)
        return key + "_" + binascii.crc32(key.encode()).to_bytes(4, "little").hex()

    def pypi(self, test=False):
        loc = b"test.pypi.org" if test else b"pypi.org"
        ident = json.dumps({"version": 1, "nonce": self.s(HEX, 32)}).encode()
        m = bytes([2, 1, len(loc)]) + loc + bytes([2, len(ident)]) + ident + b"\x00"
        caveat = json.dumps([1, [self.s(HEX, 32)]]).encode()
        m += bytes([2, len(caveat)]) + caveat + b"\x00\x00" + bytes([6, 32]) + self.raw(32)
        return "pypi-" + base64.urlsafe_b64encode(m).decode().rstrip("=")

    def bech32(self, hrp, nbytes):
        data = _convertbits(self.raw(nbytes), 8, 5)
        values = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp] + data
        poly = _polymod(values + [0] * 6) ^ 1
        checksum = [(poly >> 5 * (5 - i)) & 31 for i in range(6)]
        return (hrp + "1" + "".join(BECH32[d] for d in data + checksum)).upper()

    def xprv(self):
        payload = bytes.fromhex("0488ADE4") + bytes([0]) + b"\0" * 4 + b"\0" * 4 + self.raw(32) + b"\0" + self.raw(32)
        check = hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
        return _b58(payload + check)

    def jwt(self, claims=None):
        def enc(o):
            return base64.urlsafe_b64encode(json.dumps(o, separators=(",", ":")).encode()).decode().rstrip("=")

        head = enc({"alg": self.rng.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"})
        body = enc(claims or {"sub": self.s(DIG, 9), "iat": self.rng.randint(1600000000, 1800000000)})
        return f"{head}.{body}.{self.s(URLSAFE, 43)}"

    def discord_bot(self):
        uid = str(self.rng.randint(10**17, 10**19 - 1)).encode()
        return base64.b64encode(uid).decode().rstrip("=") + "." + self.s(URLSAFE, 6) + "." + self.s(URLSAFE, 38)


def _convertbits(data, frombits, tobits):
    acc = bits = 0
    out = []
    for b in data:
        acc = (acc << frombits) | b
        bits += frombits
        while bits >= tobits:
            bits -= tobits
            out.append((acc >> bits) & ((1 << tobits) - 1))
    if bits:
        out.append((acc << (tobits - bits)) & ((1 << tobits) - 1))
    return out


def _polymod(values):
    gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            chk ^= gen[i] if ((top >> i) & 1) else 0
    return chk


def _b58(data):
    n = int.from_bytes(data, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


# --------------------------------------------------------------------------- providers
# (name, how the variable is usually called, generator). The variable name feeds the
# carriers; a provider whose key has no prefix is only recognisable next to its name.
def providers(g):
    s = g.s
    return [
        ("aws-access-key-id", "AWS_ACCESS_KEY_ID", lambda: g.rng.choice(["AKIA", "ASIA"]) + s(UPNUM, 16)),
        ("aws-secret-access-key", "AWS_SECRET_ACCESS_KEY", lambda: s(ALNUM + "/+", 40)),
        ("google-api-key", "GOOGLE_API_KEY", lambda: "AIza" + s(URLSAFE, 35)),
        ("google-oauth-client-secret", "GOOGLE_CLIENT_SECRET", lambda: "GOCSPX-" + s(URLSAFE, 28)),
        ("google-oauth-access-token", "access_token", lambda: "ya29." + s(URLSAFE, 120)),
        ("github-pat", "GITHUB_TOKEN", lambda: g.github_style("ghp_")),
        ("github-oauth", "GH_TOKEN", lambda: g.github_style("gho_")),
        ("github-app-user", "GITHUB_TOKEN", lambda: g.github_style("ghu_")),
        ("github-app-install", "GITHUB_TOKEN", lambda: g.github_style("ghs_")),
        ("github-refresh", "refresh_token", lambda: g.github_style("ghr_")),
        ("github-fine-grained", "GITHUB_PAT", lambda: "github_pat_" + s(ALNUM, 22) + "_" + s(ALNUM, 59)),
        ("gitlab-pat", "GITLAB_TOKEN", lambda: "glpat-" + s(URLSAFE, 20)),
        ("gitlab-runner", "RUNNER_TOKEN", lambda: "glrt-" + s(URLSAFE, 20)),
        ("gitlab-deploy", "DEPLOY_TOKEN", lambda: "gldt-" + s(URLSAFE, 20)),
        ("npm", "NPM_TOKEN", lambda: g.github_style("npm_")),
        ("pypi", "PYPI_TOKEN", lambda: g.pypi()),
        ("pypi-test", "TEST_PYPI_TOKEN", lambda: g.pypi(test=True)),
        ("rubygems", "GEM_HOST_API_KEY", lambda: "rubygems_" + s(HEX, 48)),
        ("crates-io", "CARGO_REGISTRY_TOKEN", lambda: "cio" + s(ALNUM, 32)),
        ("docker-hub", "DOCKERHUB_TOKEN", lambda: "dckr_pat_" + s(URLSAFE, 27)),
        ("slack-bot", "SLACK_BOT_TOKEN", lambda: f"xoxb-{s(DIG, 12)}-{s(DIG, 13)}-{s(ALNUM, 24)}"),
        ("slack-user", "SLACK_TOKEN", lambda: f"xoxp-{s(DIG, 12)}-{s(DIG, 12)}-{s(DIG, 13)}-{s(HEX, 32)}"),
        ("slack-app", "SLACK_APP_TOKEN", lambda: f"xapp-1-A{s(UPNUM, 10)}-{s(DIG, 13)}-{s(HEX, 64)}"),
        ("slack-webhook", "SLACK_WEBHOOK_URL", lambda: f"https://hooks.slack.com/services/T{s(UPNUM, 10)}/B{s(UPNUM, 10)}/{s(ALNUM, 24)}"),
        ("discord-bot", "DISCORD_TOKEN", lambda: g.discord_bot()),
        ("discord-webhook", "DISCORD_WEBHOOK", lambda: f"https://discord.com/api/webhooks/{s(DIG, 19)}/{s(URLSAFE, 68)}"),
        ("telegram-bot", "TELEGRAM_BOT_TOKEN", lambda: f"{g.rng.randint(10**8, 10**10 - 1)}:AA{s(URLSAFE, 33)}"),
        ("stripe-live", "STRIPE_SECRET_KEY", lambda: "sk_live_" + s(ALNUM, 99)),
        ("stripe-test", "STRIPE_SECRET_KEY", lambda: "sk_test_" + s(ALNUM, 24)),
        ("stripe-restricted", "STRIPE_KEY", lambda: "rk_live_" + s(ALNUM, 99)),
        ("stripe-webhook", "STRIPE_WEBHOOK_SECRET", lambda: "whsec_" + s(ALNUM, 32)),
        ("square", "SQUARE_ACCESS_TOKEN", lambda: "EAAA" + s(URLSAFE, 60)),
        ("shopify", "SHOPIFY_ACCESS_TOKEN", lambda: g.rng.choice(["shpat_", "shpss_", "shpca_", "shppa_"]) + s(HEX, 32)),
        ("openai", "OPENAI_API_KEY", lambda: "sk-proj-" + s(URLSAFE, 74) + "T3BlbkFJ" + s(URLSAFE, 74)),
        ("openai-legacy", "OPENAI_API_KEY", lambda: "sk-" + s(ALNUM, 20) + "T3BlbkFJ" + s(ALNUM, 20)),
        ("anthropic", "ANTHROPIC_API_KEY", lambda: "sk-ant-api03-" + s(URLSAFE, 93) + "AA"),
        ("anthropic-admin", "ANTHROPIC_ADMIN_KEY", lambda: "sk-ant-admin01-" + s(URLSAFE, 93) + "AA"),
        ("openrouter", "OPENROUTER_API_KEY", lambda: "sk-or-v1-" + s(HEX, 64)),
        ("huggingface", "HF_TOKEN", lambda: "hf_" + s(ALNUM, 34)),
        ("groq", "GROQ_API_KEY", lambda: "gsk_" + s(ALNUM, 52)),
        ("replicate", "REPLICATE_API_TOKEN", lambda: "r8_" + s(ALNUM, 37)),
        ("xai", "XAI_API_KEY", lambda: "xai-" + s(ALNUM, 80)),
        ("perplexity", "PPLX_API_KEY", lambda: "pplx-" + s(ALNUM, 48)),
        ("langsmith", "LANGSMITH_API_KEY", lambda: f"lsv2_pt_{s(HEX, 32)}_{s(HEX, 10)}"),
        ("pinecone", "PINECONE_API_KEY", lambda: f"pcsk_{s(ALNUM, 6)}_{s(ALNUM, 63)}"),
        ("nvidia", "NVIDIA_API_KEY", lambda: "nvapi-" + s(URLSAFE, 64)),
        ("sendgrid", "SENDGRID_API_KEY", lambda: f"SG.{s(URLSAFE, 22)}.{s(URLSAFE, 43)}"),
        ("mailgun", "MAILGUN_API_KEY", lambda: "key-" + s(HEX, 32)),
        ("mailchimp", "MAILCHIMP_API_KEY", lambda: s(HEX, 32) + "-us" + str(g.rng.randint(1, 21))),
        ("brevo", "BREVO_API_KEY", lambda: f"xkeysib-{s(HEX, 64)}-{s(ALNUM, 16)}"),
        ("resend", "RESEND_API_KEY", lambda: f"re_{s(ALNUM, 8)}_{s(ALNUM, 24)}"),
        ("twilio-api-key", "TWILIO_API_KEY", lambda: "SK" + s(HEX, 32)),
        ("twilio-account-sid", "TWILIO_ACCOUNT_SID", lambda: "AC" + s(HEX, 32)),
        ("digitalocean", "DIGITALOCEAN_TOKEN", lambda: "dop_v1_" + s(HEX, 64)),
        ("heroku", "HEROKU_API_KEY", lambda: "HRKU-AA" + s(URLSAFE, 58)),
        ("vault", "VAULT_TOKEN", lambda: "hvs." + s(URLSAFE, 90)),
        ("terraform-cloud", "TFE_TOKEN", lambda: f"{s(ALNUM, 14)}.atlasv1.{s(URLSAFE, 67)}"),
        ("doppler", "DOPPLER_TOKEN", lambda: "dp.st.prd." + s(ALNUM, 43)),
        ("pulumi", "PULUMI_ACCESS_TOKEN", lambda: "pul-" + s(HEX, 40)),
        ("netlify", "NETLIFY_AUTH_TOKEN", lambda: "nfp_" + s(ALNUM, 36)),
        ("flyio", "FLY_API_TOKEN", lambda: "FlyV1 fm2_" + s(B64, 180)),
        ("cloudflare-origin-ca", "CF_ORIGIN_CA_KEY", lambda: f"v1.0-{s(HEX, 24)}-{s(HEX, 146)}"),
        ("new-relic-user", "NEW_RELIC_API_KEY", lambda: "NRAK-" + s(UPNUM, 27)),
        ("sentry-org", "SENTRY_AUTH_TOKEN", lambda: "sntrys_" + g.b64(90) + "_" + s(ALNUM, 43)),
        ("sentry-user", "SENTRY_AUTH_TOKEN", lambda: "sntryu_" + s(HEX, 64)),
        ("grafana-service-account", "GRAFANA_TOKEN", lambda: g.grafana_sa()),
        ("grafana-cloud", "GRAFANA_CLOUD_TOKEN", lambda: "glc_" + g.b64(90, pad=False)),
        ("dynatrace", "DT_API_TOKEN", lambda: f"dt0c01.{s(UPNUM, 24)}.{s(UPNUM, 64)}"),
        ("posthog", "POSTHOG_PERSONAL_API_KEY", lambda: "phx_" + s(ALNUM, 43)),
        ("linear", "LINEAR_API_KEY", lambda: "lin_api_" + s(ALNUM, 40)),
        ("notion", "NOTION_TOKEN", lambda: "ntn_" + s(DIG, 11) + s(ALNUM, 35)),
        ("airtable", "AIRTABLE_TOKEN", lambda: f"pat{s(ALNUM, 14)}.{s(HEX, 64)}"),
        ("figma", "FIGMA_TOKEN", lambda: "figd_" + s(URLSAFE, 40)),
        ("postman", "POSTMAN_API_KEY", lambda: f"PMAK-{s(HEX, 24)}-{s(HEX, 34)}"),
        ("atlassian", "JIRA_API_TOKEN", lambda: "ATATT3xFfGF0" + s(URLSAFE, 170) + "=" + s(HEX.upper(), 8)),
        ("bitbucket-app-password", "BITBUCKET_APP_PASSWORD", lambda: "ATBB" + s(ALNUM, 32)),
        ("databricks", "DATABRICKS_TOKEN", lambda: "dapi" + s(HEX, 32)),
        ("planetscale", "PLANETSCALE_TOKEN", lambda: "pscale_tkn_" + s(URLSAFE, 43)),
        ("supabase", "SUPABASE_ACCESS_TOKEN", lambda: "sbp_" + s(HEX, 40)),
        ("supabase-secret", "SUPABASE_SECRET_KEY", lambda: "sb_secret_" + s(URLSAFE, 31)),
        ("age-identity", "AGE_KEY", lambda: g.bech32("age-secret-key-", 32)),
        ("age-pq-identity", "AGE_KEY", lambda: g.bech32("age-secret-key-pq-", 32)),
        ("bip32-xprv", "WALLET_XPRV", lambda: g.xprv()),
        ("jwt", "AUTH_JWT", lambda: g.jwt()),
        ("shippo", "SHIPPO_API_KEY", lambda: "shippo_live_" + s(HEX, 40)),
        ("easypost", "EASYPOST_API_KEY", lambda: "EZAK" + s(ALNUM, 54)),
        ("duffel", "DUFFEL_TOKEN", lambda: "duffel_live_" + s(URLSAFE, 43)),
        ("frameio", "FRAMEIO_TOKEN", lambda: "fio-u-" + s(URLSAFE, 64)),
        ("typeform", "TYPEFORM_TOKEN", lambda: f"tfp_{s(URLSAFE, 44)}_{s(URLSAFE, 14)}"),
        ("contentful", "CONTENTFUL_TOKEN", lambda: "CFPAT-" + s(URLSAFE, 43)),
        ("hubspot", "HUBSPOT_TOKEN", lambda: f"pat-na1-{g.uuid()}"),
        ("sourcegraph", "SRC_ACCESS_TOKEN", lambda: "sgp_" + s(HEX, 16) + "_" + s(HEX, 40)),
        ("buildkite", "BUILDKITE_TOKEN", lambda: "bkua_" + s(HEX, 40)),
        ("circleci", "CIRCLE_TOKEN", lambda: f"CCIPAT_{s(ALNUM, 22)}_{s(HEX, 40)}"),
        ("prefect", "PREFECT_API_KEY", lambda: "pnu_" + s(ALNUM, 36)),
        ("infracost", "INFRACOST_API_KEY", lambda: "ico-" + s(ALNUM, 32)),
        ("octopus", "OCTOPUS_API_KEY", lambda: "API-" + s(UPNUM, 29)),
        ("readme", "README_API_KEY", lambda: "rdme_" + s(LOWNUM, 70)),
        ("clojars", "CLOJARS_TOKEN", lambda: "CLOJARS_" + s(LOWNUM, 60)),
        ("nuget", "NUGET_API_KEY", lambda: "oy2" + s(LOWNUM, 43)),
        ("jfrog", "JFROG_API_KEY", lambda: "AKCp" + s(ALNUM, 69)),
        ("mapbox-secret", "MAPBOX_SECRET_TOKEN", lambda: "sk.eyJ1Ijoi" + s(URLSAFE, 60) + "." + s(URLSAFE, 22)),
        ("facebook-access", "FB_ACCESS_TOKEN", lambda: "EAA" + s(ALNUM, 180)),
        ("twitter-bearer", "TWITTER_BEARER_TOKEN", lambda: "A" * 22 + s(ALNUM + "%", 90)),
        ("alibaba", "ALIBABA_ACCESS_KEY_ID", lambda: "LTAI" + s(ALNUM, 20)),
        ("tencent", "TENCENTCLOUD_SECRET_ID", lambda: "AKID" + s(ALNUM, 32)),
        ("yandex", "YC_API_KEY", lambda: "AQVN" + s(URLSAFE, 36)),
        ("azure-ad-client-secret", "AZURE_CLIENT_SECRET", lambda: s(ALNUM, 3) + str(g.rng.randint(0, 9)) + "Q~" + s(URLSAFE + ".~", 34)),
        ("azure-storage", "AZURE_STORAGE_CONNECTION_STRING", lambda: f"DefaultEndpointsProtocol=https;AccountName=acct{s(LOWNUM, 6)};AccountKey={g.b64(64)};EndpointSuffix=core.windows.net"),
        ("gocardless", "GOCARDLESS_ACCESS_TOKEN", lambda: "live_" + s(URLSAFE, 40)),
        ("flutterwave", "FLW_SECRET_KEY", lambda: f"FLWSECK-{s(HEX, 32)}-X"),
        ("plaid", "PLAID_ACCESS_TOKEN", lambda: f"access-production-{g.uuid()}"),
        ("telnyx", "TELNYX_API_KEY", lambda: f"KEY0{s(HEX.upper(), 31)}_{s(ALNUM, 22)}"),
        ("pubnub", "PUBNUB_SECRET_KEY", lambda: "sec-c-" + s(ALNUM, 44)),
        ("firebase-fcm", "FCM_SERVER_KEY", lambda: f"AAAA{s(URLSAFE, 7)}:APA91b{s(URLSAFE, 134)}"),
        ("expo", "EXPO_TOKEN", lambda: "expo_" + s(URLSAFE, 40)),
        ("cloudinary", "CLOUDINARY_URL", lambda: f"cloudinary://{s(DIG, 15)}:{s(URLSAFE, 27)}@demo{s(LOWNUM, 4)}"),
        ("langfuse", "LANGFUSE_SECRET_KEY", lambda: "sk-lf-" + g.uuid()),
        ("mailersend", "MAILERSEND_API_TOKEN", lambda: "mlsn." + s(HEX, 64)),
        ("render", "RENDER_API_KEY", lambda: "rnd_" + s(ALNUM, 32)),
        ("vercel", "VERCEL_TOKEN", lambda: "vcp_" + s(ALNUM, 56)),
        ("dropbox", "DROPBOX_TOKEN", lambda: "sl.u." + s(URLSAFE, 140)),
        ("asana", "ASANA_PAT", lambda: f"2/{s(DIG, 16)}/{s(DIG, 16)}:{s(HEX, 32)}"),
        ("harness", "HARNESS_PAT", lambda: f"pat.{s(URLSAFE, 22)}.{s(HEX, 24)}.{s(ALNUM, 20)}"),
        ("onepassword-service", "OP_SERVICE_ACCOUNT_TOKEN", lambda: "ops_eyJ" + s(URLSAFE, 300)),
        ("lemon-paddle", "PADDLE_API_KEY", lambda: f"pdl_live_apikey_{s(LOWNUM, 26)}_{s(ALNUM, 22)}_{s(ALNUM, 3)}"),
        ("cerebras", "CEREBRAS_API_KEY", lambda: "csk-" + s(LOWNUM, 48)),
        ("together", "TOGETHER_API_KEY", lambda: "tgp_v1_" + s(URLSAFE, 43)),
        ("elevenlabs", "ELEVENLABS_API_KEY", lambda: "sk_" + s(HEX, 48)),
        ("deepseek", "DEEPSEEK_API_KEY", lambda: "sk-" + s(HEX, 32)),
        ("mistral", "MISTRAL_API_KEY", lambda: s(ALNUM, 32)),
        ("cohere", "COHERE_API_KEY", lambda: s(ALNUM, 40)),
        ("datadog", "DD_API_KEY", lambda: s(HEX, 32)),
        ("twilio-auth-token", "TWILIO_AUTH_TOKEN", lambda: s(HEX, 32)),
        ("linode", "LINODE_TOKEN", lambda: s(HEX, 64)),
        ("hetzner", "HCLOUD_TOKEN", lambda: s(ALNUM, 64)),
        ("algolia-admin", "ALGOLIA_ADMIN_API_KEY", lambda: s(HEX, 32)),
        ("snyk", "SNYK_TOKEN", lambda: g.uuid()),
        ("codecov", "CODECOV_TOKEN", lambda: g.uuid()),
        ("auth0", "AUTH0_CLIENT_SECRET", lambda: s(URLSAFE, 64)),
        ("okta", "OKTA_API_TOKEN", lambda: "00" + s(URLSAFE, 40)),
        ("adafruit-io", "ADAFRUIT_AIO_KEY", lambda: "aio_" + s(ALNUM, 28)),
        ("tailscale", "TS_AUTHKEY", lambda: f"tskey-auth-k{s(ALNUM, 10)}CNTRL-{s(ALNUM, 33)}"),
        ("ngrok", "NGROK_AUTHTOKEN", lambda: s(ALNUM, 27) + "_" + s(ALNUM, 21)),
        ("fastly", "FASTLY_API_TOKEN", lambda: s(URLSAFE, 32)),
        ("segment", "SEGMENT_WRITE_KEY", lambda: s(ALNUM, 32)),
        ("mongodb-uri", "MONGODB_URI", lambda: f"mongodb+srv://app:{s(ALNUM, 16)}@cluster0.{s(LOWNUM, 5)}.mongodb.net/prod"),
        ("postgres-uri", "DATABASE_URL", lambda: f"postgres://svc_{s(LOW, 5)}:{s(ALNUM, 20)}@db-{s(LOWNUM, 6)}.internal:5432/app"),
        ("redis-uri", "REDIS_URL", lambda: f"rediss://default:{s(ALNUM, 32)}@redis-{s(DIG, 5)}.cache.local:6380"),
    ]


def private_keys(g):
    """Key material in every serialisation, as (kind, text)."""
    def pem(label, prefix_b64="", n=1190, dashes=5, sep="\n", case=str.upper, spaced=False):
        data = (prefix_b64 + g.b64(n)) if prefix_b64 else g.b64(n)
        lines = sep.join(data[i : i + 64] for i in range(0, len(data), 64))
        d = "-" * dashes
        sp = " " if spaced else ""
        head = case(f"{d}{sp}BEGIN {label}{sp}{d}")
        tail = case(f"{d}{sp}END {label}{sp}{d}")
        return f"{head}{sep}{lines}{sep}{tail}"

    return [
        ("pem-rsa", pem("RSA PRIVATE KEY", "MIIEpAIBAAKCAQEA")),
        ("pem-pkcs8", pem("PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ")),
        ("pem-ec", pem("EC PRIVATE KEY", "MHcCAQEEI", n=90)),
        ("pem-encrypted", pem("ENCRYPTED PRIVATE KEY", "MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI")),
        ("pem-dsa", pem("DSA PRIVATE KEY", "MIIBuwIBAAKBgQ", n=420)),
        ("pem-openssh", pem("OPENSSH PRIVATE KEY", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", n=300)),
        ("pem-spaced", pem("PRIVATE KEY", "MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQ", spaced=True)),
        ("pem-lowercase", pem("private key", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ", case=str.lower)),
        ("pem-four-dashes", pem("RSA PRIVATE KEY", "MIIEowIBAAKCAQEA", dashes=4)),
        ("pem-custom-label", pem("ACME SIGNING KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ")),
        ("pem-escaped-json", pem("PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ", sep="\\n")),
        ("pgp-private", pem("PGP PRIVATE KEY BLOCK", "lQVYBG", n=900)),
        ("der-pkcs8-bare", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ" + g.b64(900)),
        ("der-pkcs1-bare", "MIIEpAIBAAKCAQEA" + g.b64(900)),
        ("der-sec1-bare", "MHcCAQEEI" + g.b64(90)),
        ("der-ed25519-bare", "MC4CAQAwBQYDK2VwBCIEI" + g.b64(30)),
        ("openssh-body", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW" + g.b64(300)),
        ("putty", f"PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\n{g.b64(51)}\nPrivate-Lines: 1\n{g.b64(48)}\nPrivate-MAC: {g.s(HEX, 64)}"),
        ("age", g.bech32("age-secret-key-", 32)),
        ("age-pq", g.bech32("age-secret-key-pq-", 32)),
        ("jwk-rsa", json.dumps({"kty": "RSA", "n": g.b64(256, url=True, pad=False), "e": "AQAB", "d": g.b64(256, url=True, pad=False), "p": g.b64(128, url=True, pad=False)})),
        ("jwk-ec", json.dumps({"crv": "P-256", "d": g.b64(32, url=True, pad=False), "kty": "EC", "x": g.b64(32, url=True, pad=False), "y": g.b64(32, url=True, pad=False)})),
        ("jwk-okp", json.dumps({"kty": "OKP", "crv": "Ed25519", "x": g.b64(32, url=True, pad=False), "d": g.b64(32, url=True, pad=False)})),
        ("wireguard", f"[Interface]\nPrivateKey = {g.b64(32)}\nAddress = 10.0.0.2/32"),
        ("xprv", g.xprv()),
        ("kubeconfig-key-data", "client-key-data: " + base64.b64encode(pem("RSA PRIVATE KEY", "MIIEpAIBAAKCAQEA").encode()).decode()),
    ]


def generic(g):
    """Credentials recognisable by their name and shape, as (kind, name, value)."""
    pw = lambda: g.rng.choice(["Tr0ub4dor", "Wint3r", "Blu3Sky", "K1ngfish", "Qu4rtz", "Gr4nite", "V1olet"]) + g.rng.choice("!#%&*-_.") + g.s(ALNUM, g.rng.randint(4, 9))
    tok = lambda: g.s(ALNUM, g.rng.randint(24, 48))
    return [
        ("api-key", g.rng.choice(["API_KEY", "apiKey", "api_key", "ServiceApiKey", "X_API_KEY"]), tok),
        ("secret", g.rng.choice(["SECRET", "client_secret", "APP_SECRET", "secretKey", "JWT_SECRET", "SIGNING_SECRET"]), tok),
        ("token", g.rng.choice(["ACCESS_TOKEN", "auth_token", "botToken", "token", "API_TOKEN", "DEPLOY_TOKEN"]), tok),
        ("password", g.rng.choice(["PASSWORD", "db_password", "DB_PASS", "adminPassword", "passwd", "SMTP_PASSWORD"]), pw),
        ("credential", g.rng.choice(["CREDENTIALS", "service_credential", "REGISTRY_CREDENTIAL"]), tok),
        ("private-key-hex", g.rng.choice(["PRIVATE_KEY", "signing_key", "privKey"]), lambda: g.s(HEX, 64)),
        ("custom-key", g.rng.choice(["ADAFRUIT_AIO_KEY", "MERCURE_KEY", "ACME_LICENSE_KEY", "WEATHER_KEY", "ENCRYPTION_KEY"]), tok),
    ]
