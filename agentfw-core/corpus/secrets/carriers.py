"""Carriers: the kinds of text agents pass each other, with a value placed where it would
really sit. Each carrier is a source of its own, and every source belongs to exactly one
split (see build.py), so a pattern tuned on one way of writing a secret is measured on
ways it has not seen.

A carrier takes (g, name, value) and returns text. `name` is the variable a person would
use for the value (`STRIPE_SECRET_KEY`); `value` is the secret, or a benign look-alike.
"""
import re


def lower_name(name):
    parts = name.lower().split("_")
    return parts[0] + "".join(p.title() for p in parts[1:])


def snake_name(name):
    """`STRIPE_SECRET_KEY` and `adminPassword` as Python and Ruby would write them."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def pascal_name(name):
    """`STRIPE_SECRET_KEY` as a method suffix: `setStripeSecretKey`, `WithStripeSecretKey`."""
    return "".join(p[:1].upper() + p[1:] for p in snake_name(name).split("_"))


def camel_name(name):
    """`STRIPE_SECRET_KEY` as a builder method or a named argument: `stripeSecretKey`."""
    pascal = pascal_name(name)
    return pascal[:1].lower() + pascal[1:]


def env(g, name, value):
    other = g.rng.choice(["NODE_ENV=production", "PORT=8080", "LOG_LEVEL=info", "APP_URL=https://app.internal"])
    q = g.rng.choice(["", '"', "'"])
    return f"# .env for the staging deploy\n{other}\n{name}={q}{value}{q}\nFEATURE_FLAGS=search,billing\n"


def python(g, name, value):
    return (
        f"import os\n\nimport requests\n\n{name} = \"{value}\"\n\n\ndef fetch(path):\n"
        f"    return requests.get(BASE + path, headers={{\"Authorization\": f\"Bearer {{{name}}}\"}}, timeout=10)\n"
    )


def log(g, name, value):
    ts = f"2025-0{g.rng.randint(1, 9)}-1{g.rng.randint(0, 9)}T0{g.rng.randint(0, 9)}:1{g.rng.randint(0, 9)}:22Z"
    return (
        f"{ts} INFO  worker-3 starting job sync-accounts\n{ts} DEBUG config loaded: {name.lower()}={value} region=eu-west-1\n"
        f"{ts} WARN  retrying request after 502 (attempt 2/5)\n"
    )


def chat(g, name, value):
    lead = g.rng.choice(["hey, here's the key you asked for", "use this for the staging box", "try with this one, the old one expired", "pasting the creds so you can rerun it"])
    return f"{lead}: {value}\nlet me know if the deploy still fails"


def markdown(g, name, value):
    return f"## Running locally\n\nExport the key before starting the server:\n\n```bash\nexport {name}={value}\nnpm run dev\n```\n\nThen open http://localhost:3000.\n"


def k8s(g, name, value):
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: api-config\n  namespace: prod\ndata:\n"
        f"  {name}: \"{value}\"\n  REGION: eu-central-1\n"
    )


def ini(g, name, value):
    return f"[default]\nregion = us-east-1\n{name.lower()} = {value}\noutput = json\n"


def yaml(g, name, value):
    return f"service:\n  name: billing\n  replicas: 3\n  {lower_name(name)}: {value}\n  timeout: 30s\n"


def javascript(g, name, value):
    return f"const client = new Client({{\n  {lower_name(name)}: '{value}',\n  retries: 3,\n}});\nexport default client;\n"


def shell_history(g, name, value):
    return f"  501  cd ~/src/api\n  502  git pull\n  503  export {name}='{value}'\n  504  make deploy\n  505  kubectl get pods -n prod\n"


def http_dump(g, name, value):
    return (
        f"POST /v1/sync HTTP/1.1\r\nHost: api.internal\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {value}\r\nContent-Length: 17\r\n\r\n{{\"full\": false}}"
    )


def terraform(g, name, value):
    return f"provider \"acme\" {{\n  region = \"eu-west-1\"\n  {name.lower()} = \"{value}\"\n}}\n"


def java_properties(g, name, value):
    return f"spring.datasource.url=jdbc:postgresql://db:5432/app\n{name.lower().replace('_', '.')}={value}\nserver.port=8080\n"


def json_config(g, name, value):
    return "{\n  \"environment\": \"production\",\n  \"" + lower_name(name) + "\": \"" + value + "\",\n  \"retries\": 3\n}"


def toml(g, name, value):
    return f"[service]\nname = \"billing\"\n{name.lower()} = \"{value}\"\nworkers = 4\n"


def go(g, name, value):
    return f"package main\n\nconst {lower_name(name)} = \"{value}\"\n\nfunc main() {{\n\trun({lower_name(name)})\n}}\n"


def curl(g, name, value):
    style = g.rng.randrange(3)
    if style == 0:
        return f"curl -sS https://api.service.dev/v2/items -H \"Authorization: Bearer {value}\" | jq .items"
    if style == 1:
        return f"curl -sS -H 'X-Api-Key: {value}' https://api.service.dev/v2/items"
    return f"curl -sS \"https://api.service.dev/v2/items?api_key={value}\""


def docker_compose(g, name, value):
    return f"services:\n  api:\n    image: ghcr.io/acme/api:1.4\n    environment:\n      - {name}={value}\n      - PORT=8080\n"


def github_actions(g, name, value):
    return f"jobs:\n  deploy:\n    runs-on: ubuntu-latest\n    env:\n      {name}: {value}\n    steps:\n      - run: ./deploy.sh\n"


def agent_chat(g, name, value):
    return (
        f"I found the failing call. The service reads {name} from the environment; in the "
        f"staging shell it is set to {value} which is why the requests succeed there. Want me to add it to CI?"
    )


def rust(g, name, value):
    return f"fn client() -> Client {{\n    Client::builder()\n        .api_key(\"{value}\")\n        .build()\n}}\n"


def http_etag(g, name, value):
    return f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nETag: \"{value}\"\r\nX-Request-Id: {g.uuid()}\r\n\r\n{{\"ok\": true}}"


def curl_download(g, name, value):
    return f"curl -sSLO https://downloads.example.org/releases/v2.1.0/app.tar.gz\necho '{value}  app.tar.gz' | sha256sum -c -"


# A credential passed as an argument: builder methods, setters, option functions, keyword
# and named arguments, credential constructors, headers set by a call. Train has Java,
# Python and Go; dev has C#, PHP, Ruby, Kotlin and JavaScript; test (written before these)
# has Rust.
def java_builder(g, name, value):
    if g.rng.randrange(2):
        return (
            f"AcmeClient client = AcmeClient.builder()\n    .endpoint(\"https://api.acme.io\")\n"
            f"    .{camel_name(name)}(\"{value}\")\n    .build();\n"
        )
    return (
        f"AcmeConfig config = new AcmeConfig();\nconfig.setRegion(\"eu-west-1\");\n"
        f"config.set{pascal_name(name)}(\"{value}\");\nreturn new AcmeClient(config);\n"
    )


def python_kwargs(g, name, value):
    return f"client = acme.Client(\n    base_url=\"https://api.acme.io\",\n    {snake_name(name)}=\"{value}\",\n    timeout=30,\n)\n"


def go_options(g, name, value):
    return (
        f"client, err := acme.NewClient(ctx,\n\toption.WithEndpoint(\"https://api.acme.io\"),\n"
        f"\toption.With{pascal_name(name)}(\"{value}\"),\n)\nif err != nil {{\n\treturn err\n}}\n"
    )


def go_header(g, name, value):
    header = g.rng.choice(['"Authorization", "Bearer ', '"X-Api-Key", "', '"Authorization", "Token '])
    return f"req, _ := http.NewRequest(\"GET\", url, nil)\nreq.Header.Set({header}{value}\")\nresp, err := http.DefaultClient.Do(req)\n"


def go_header_etag(g, name, value):
    return f"req, _ := http.NewRequest(\"GET\", url, nil)\nreq.Header.Set(\"If-None-Match\", \"{value}\")\nresp, err := http.DefaultClient.Do(req)\n"


def csharp_options(g, name, value):
    if g.rng.randrange(2):
        return f"builder.Services.AddAcmeClient(options =>\n{{\n    options.Use{pascal_name(name)}(\"{value}\");\n    options.Retries = 3;\n}});\n"
    return f"var client = new AcmeClient(new Uri(\"https://api.acme.io\"), new {pascal_name(name)}Credential(\"{value}\"));\n"


def php_builder(g, name, value):
    return f"$client = (new \\Acme\\ClientBuilder())\n    ->withRegion('eu-west-1')\n    ->with{pascal_name(name)}('{value}')\n    ->build();\n"


def ruby_kwargs(g, name, value):
    return f"client = Acme::Client.new(\n  {snake_name(name)}: \"{value}\",\n  timeout: 10\n)\n"


def kotlin_named(g, name, value):
    return f"val client = AcmeClient(\n    endpoint = \"https://api.acme.io\",\n    {camel_name(name)} = \"{value}\",\n)\n"


def js_header(g, name, value):
    header = g.rng.choice(["'Authorization', 'Bearer ", "'X-Api-Key', '", "'Authorization', 'token "])
    return f"const res = await request(app)\n  .get('/v1/items')\n  .set({header}{value}')\n  .expect(200);\n"


def js_header_etag(g, name, value):
    return f"const res = await request(app)\n  .get('/v1/items')\n  .set('If-None-Match', '{value}')\n  .expect(304);\n"


# Carriers that put a value where a credential goes have a benign twin that puts it where
# data goes: look-alikes are placed with the twin.
BENIGN_TWIN = {http_dump: http_etag, curl: curl_download, go_header: go_header_etag, js_header: js_header_etag}


# Whole-text carriers: the value is the text (keys, certificates, data blobs).
def bare(g, name, value):
    return value


def key_file_chat(g, name, value):
    return f"Here is the key file from the old server:\n\n{value}\n\nCan you install it on the new box?"


def key_in_json(g, name, value):
    return "{\"type\": \"service_account\", \"" + lower_name(name) + "\": \"" + value.replace("\n", "\\n") + "\"}"


# Each split gets its own carriers: nothing measured on test was written like train or dev.
SPLITS = {
    "train": [env, python, log, chat, markdown, k8s, ini, java_builder, python_kwargs, go_options, go_header, bare],
    "dev": [yaml, javascript, shell_history, http_dump, terraform, java_properties, csharp_options, php_builder, ruby_kwargs, kotlin_named, js_header, key_file_chat],
    "test": [json_config, toml, go, curl, docker_compose, github_actions, agent_chat, rust, key_in_json],
}
