//! Credentials in each issuer's documented shape, with random bodies made
//! from a seed at test time (the repository holds no token that a secret
//! scanner could take for a live one), and look-alikes that must print
//! intact. Used by the unit tests, the integration tests and the fuzz
//! target; not part of the API.

/// A small deterministic generator (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (not zero).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// `n` characters drawn from `alphabet`.
    pub fn pick(&mut self, alphabet: &str, n: usize) -> String {
        let a = alphabet.as_bytes();
        (0..n).map(|_| a[(self.next_u64() % a.len() as u64) as usize] as char).collect()
    }
}

pub const UPPER32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
pub const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
pub const B64URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
pub const HEX: &str = "0123456789abcdef";

/// A credential planted in a line: the rule expected to mask it, the
/// secret (which must not be printed whole) and the line.
#[derive(Debug, Clone)]
pub struct Sample {
    pub rule: &'static str,
    pub secret: String,
    pub line: String,
}

fn s(rule: &'static str, secret: String, line: String) -> Sample {
    Sample { rule, secret, line }
}

/// One credential of every documented shape, on a line as tools print it.
pub fn credentials(seed: u64) -> Vec<Sample> {
    let mut r = Rng::new(seed);
    let mut v = Vec::new();
    let aws_id = format!("AKIA{}", r.pick(UPPER32, 16));
    v.push(s("aws-access-key-id", aws_id.clone(), format!("export AWS_ACCESS_KEY_ID={aws_id}")));
    let sts = format!("ASIA{}", r.pick(UPPER32, 16));
    v.push(s("aws-access-key-id", sts.clone(), format!("  \"AccessKeyId\": \"{sts}\",")));
    let aws_secret = r.pick(B64, 40);
    v.push(s("aws-secret-access-key", aws_secret.clone(), format!("aws_secret_access_key = {aws_secret}")));
    let google = format!("AIza{}", r.pick(B64URL, 35));
    v.push(s("google-api-key", google.clone(), format!("GET https://maps.example.com/api?key={google}&q=x 403")));
    let gsecret = format!("GOCSPX-{}", r.pick(B64URL, 28));
    v.push(s("google-oauth-secret", gsecret.clone(), format!("client_secret: {gsecret}")));
    let azure = format!("{}==", r.pick(B64, 86));
    v.push(s(
        "azure-storage-key",
        azure.clone(),
        format!(
            "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acct1;AccountKey={azure};EndpointSuffix=core.windows.net"
        ),
    ));
    let sb = format!("{}=", r.pick(B64, 43));
    v.push(s(
        "azure-shared-access-key",
        sb.clone(),
        format!("Endpoint=sb://ns1.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={sb}"),
    ));
    let ghp = format!("ghp_{}", r.pick(ALNUM, 36));
    v.push(s("github-token", ghp.clone(), format!("remote: Invalid username or token {ghp} for https://github.com")));
    let ghs = format!("ghs_{}", r.pick(ALNUM, 36));
    v.push(s("github-token", ghs.clone(), format!("GITHUB_TOKEN={ghs}")));
    let pat = format!("github_pat_{}_{}", r.pick(ALNUM, 22), r.pick(ALNUM, 59));
    v.push(s("github-fine-grained-token", pat.clone(), format!("token: {pat}")));
    let gl = format!("glpat-{}", r.pick(B64URL, 20));
    v.push(s("gitlab-token", gl.clone(), format!("Using PRIVATE-TOKEN {gl} for gitlab.example.com")));
    let npm = format!("npm_{}", r.pick(ALNUM, 36));
    v.push(s("npm-token", npm.clone(), format!("//registry.npmjs.org/:_authToken={npm}")));
    let pypi = format!("pypi-AgEIcHlwaS5vcmc{}", r.pick(B64URL, 120));
    v.push(s("pypi-token", pypi.clone(), format!("TWINE_PASSWORD={pypi}")));
    let slack = format!("xoxb-{}-{}-{}", r.pick("0123456789", 12), r.pick("0123456789", 13), r.pick(ALNUM, 24));
    v.push(s("slack-token", slack.clone(), format!("slack: posting with {slack}")));
    let stripe = format!("sk_live_{}", r.pick(ALNUM, 99));
    v.push(s("stripe-key", stripe.clone(), format!("Stripe::AuthenticationError: Invalid API Key provided: {stripe}")));
    let ant = format!("sk-ant-api03-{}AA", r.pick(B64URL, 93));
    v.push(s("anthropic-key", ant.clone(), format!("ANTHROPIC_API_KEY={ant}")));
    let oai = format!("sk-proj-{}", r.pick(B64URL, 124));
    v.push(s("openai-key", oai.clone(), format!("openai.AuthenticationError: Incorrect API key provided: {oai}")));
    let hf = format!("hf_{}", r.pick(ALNUM, 34));
    v.push(s("huggingface-token", hf.clone(), format!("HF_TOKEN={hf}")));
    let jwt = format!("eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}", r.pick(B64URL, 60), r.pick(B64URL, 43));
    v.push(s("jwt", jwt.clone(), format!("set-cookie: session={jwt}; Path=/; HttpOnly")));
    let pw = r.pick(ALNUM, 18);
    v.push(s("url-password", pw.clone(), format!("connecting to postgres://app:{pw}@db.internal:5432/app failed")));
    let bearer = r.pick(B64URL, 40);
    v.push(s("authorization-header", bearer.clone(), format!("> Authorization: Bearer {bearer}")));
    let assigned = r.pick(ALNUM, 32);
    v.push(s("secret-assignment", assigned.clone(), format!("DB_PASSWORD={assigned}")));
    let json = r.pick(ALNUM, 24);
    v.push(s("secret-assignment", json.clone(), format!("{{\"client_secret\": \"{json}\", \"id\": 7}}")));
    v
}

/// A PEM private key block of `lines` full lines and a short last one.
pub fn pem_block(seed: u64, lines: usize) -> Vec<String> {
    let mut r = Rng::new(seed);
    let mut v = vec!["-----BEGIN RSA PRIVATE KEY-----".to_string()];
    for _ in 0..lines {
        v.push(r.pick(B64, 64));
    }
    v.push(format!("{}==", r.pick(B64, 26)));
    v.push("-----END RSA PRIVATE KEY-----".to_string());
    v
}

/// An OpenSSH private key block (70-character lines).
pub fn openssh_block(seed: u64, lines: usize) -> Vec<String> {
    let mut r = Rng::new(seed);
    let mut v = vec!["-----BEGIN OPENSSH PRIVATE KEY-----".to_string()];
    v.push(format!("b3BlbnNzaC1rZXktdjEAAAAA{}", r.pick(B64, 46)));
    for _ in 1..lines {
        v.push(r.pick(B64, 70));
    }
    v.push(format!("{}=", r.pick(B64, 31)));
    v.push("-----END OPENSSH PRIVATE KEY-----".to_string());
    v
}

/// Lines that look like credentials to a careless eye but are not: they
/// must print intact.
pub fn look_alikes(seed: u64) -> Vec<String> {
    let mut r = Rng::new(seed);
    let uuid =
        format!("{}-{}-4{}-a{}-{}", r.pick(HEX, 8), r.pick(HEX, 4), r.pick(HEX, 3), r.pick(HEX, 3), r.pick(HEX, 12));
    vec![
        format!("commit {}", r.pick(HEX, 40)),
        format!("Merge: {} {}", r.pick(HEX, 7), r.pick(HEX, 7)),
        format!("{}  target/release/outbox", r.pick(HEX, 64)),
        format!("SHA512 ({}) = {}", "outbox.tar.gz", r.pick(HEX, 128)),
        r.pick(HEX, 64),
        format!("      \"integrity\": \"sha512-{}==\",", r.pick(B64, 86)),
        format!("sha256:{}: Pull complete", r.pick(HEX, 64)),
        format!("Digest: sha256:{}", r.pick(HEX, 64)),
        format!("x-request-id: {uuid}"),
        format!("request_id={uuid} status=200 duration=12ms"),
        format!("Cache restored from key: Linux-cargo-{}", r.pick(HEX, 64)),
        format!("cache key: node-modules-{}", r.pick(HEX, 40)),
        "Access keys that start with AKIA are long-term; ASIA keys are temporary".to_string(),
        "Tokens look like ghp_ followed by 36 characters; rotate them with gh auth refresh".to_string(),
        "password: required".to_string(),
        "Password: ********".to_string(),
        "token = ${{ secrets.GITHUB_TOKEN }}".to_string(),
        "DB_PASSWORD=$DB_PASSWORD".to_string(),
        "git clone https://github.com/rust-lang/regex.git".to_string(),
        "Listening on http://localhost:8080/api".to_string(),
        "tokens_est: 1234".to_string(),
        format!("secretName: my-tls-secret {}", r.pick(HEX, 6)),
        "error[E0308]: mismatched types: expected `Token`, found `Secret`".to_string(),
        "-----BEGIN CERTIFICATE REQUEST-----".to_string(),
        format!("pk_live_{}", r.pick(ALNUM, 24)),
        "npm notice Publishing to https://registry.npmjs.org/ with tag latest".to_string(),
        format!("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{} user@host", r.pick(B64, 42)),
    ]
}
