//! Where the S3 client's credentials and region come from: the chain the
//! AWS CLI and boto3 follow, so that keys kept where those tools keep them
//! work here too.
//!
//! 1. the environment: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`
//!    (`AWS_SESSION_TOKEN`);
//! 2. the profile `AWS_PROFILE` (default `default`) of the shared
//!    credentials file (`AWS_SHARED_CREDENTIALS_FILE`, default
//!    `~/.aws/credentials`, sections `[NAME]`), then of the config file
//!    (`AWS_CONFIG_FILE`, default `~/.aws/config`, sections
//!    `[profile NAME]` and `[default]`);
//! 3. web identity (`AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`) and
//!    container credentials (ECS, EKS Pod Identity), which object_store
//!    fetches itself;
//! 4. the instance role, from the instance metadata service, unless
//!    `AWS_EC2_METADATA_DISABLED=true`: then no credentials is an error that
//!    says where gulp looked.
//!
//! The region: `AWS_REGION`, `AWS_DEFAULT_REGION`, then the profile's
//! `region` (the credentials file's over the config file's, as boto3 merges
//! them). A profile that `AWS_PROFILE` names and neither file has is an
//! error, as it is for the AWS tools.

use std::fmt;
use std::path::{Path, PathBuf};

/// Profile keys that name another way of getting credentials (assumed
/// roles, SSO, a helper process), which gulp does not follow: a profile
/// with one of them and no keys is an error saying so, not a silent fall
/// to the instance role.
const NOT_FOLLOWED: &[&str] = &[
    "role_arn",
    "source_profile",
    "credential_source",
    "credential_process",
    "sso_session",
    "sso_start_url",
    "web_identity_token_file",
];

/// An access key: its id, secret and session token.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Keys {
    pub(crate) key_id: String,
    pub(crate) secret: String,
    pub(crate) token: Option<String>,
}

impl fmt::Debug for Keys {
    // The secret and the token never reach a log or a message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keys")
            .field("key_id", &self.key_id)
            .field("token", &self.token.is_some())
            .finish_non_exhaustive()
    }
}

/// Where the client's credentials come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// Keys gulp found, and where (for messages).
    Keys { keys: Keys, from: String },
    /// A provider of object_store's own: it fetches and renews the
    /// credentials itself.
    Provider(Provider),
}

/// The credential providers left to object_store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Provider {
    /// `AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`: STS
    /// AssumeRoleWithWebIdentity.
    WebIdentity,
    /// ECS task roles and EKS Pod Identity (`AWS_CONTAINER_CREDENTIALS_*`).
    Container,
    /// The instance role, from the instance metadata service.
    InstanceMetadata,
    /// No credentials, and none needed: `AWS_SKIP_SIGNATURE=true` sends
    /// requests unsigned.
    Unsigned,
}

/// The credentials and the region the client is built with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chain {
    pub(crate) source: Source,
    /// `None`: object_store's default (`us-east-1`).
    pub(crate) region: Option<String>,
}

/// Resolves the chain from the variables `var` gives (the process's
/// environment, or a test's). An empty variable counts as unset, as it does
/// for the AWS tools. The error is a sentence naming the variable, file and
/// line at fault, or, when nothing gave credentials, every place looked in.
pub(crate) fn resolve(var: impl Fn(&str) -> Option<String>) -> Result<Chain, String> {
    let get = |name: &str| var(name).filter(|v| !v.is_empty());
    let is_true = |name: &str| get(name).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));

    let named = ["AWS_PROFILE", "AWS_DEFAULT_PROFILE"]
        .into_iter()
        .find_map(|var| get(var).map(|name| (var, name)));
    let profile = named
        .as_ref()
        .map_or_else(|| "default".to_owned(), |(_, name)| name.clone());
    let home = get("HOME").map(PathBuf::from);
    let credentials = Shared::load(
        "AWS_SHARED_CREDENTIALS_FILE",
        get("AWS_SHARED_CREDENTIALS_FILE"),
        home.as_deref(),
        ".aws/credentials",
    )?;
    let config = Shared::load(
        "AWS_CONFIG_FILE",
        get("AWS_CONFIG_FILE"),
        home.as_deref(),
        ".aws/config",
    )?;
    let in_credentials = credentials
        .ini
        .as_ref()
        .and_then(|ini| ini.section(&profile));
    let in_config = config
        .ini
        .as_ref()
        .and_then(|ini| ini.config_profile(&profile));
    if let (Some((var, _)), None, None) = (&named, in_credentials, in_config) {
        return Err(format!(
            "the profile {profile:?} ({var}) is in neither {} nor {}",
            credentials.describe(),
            config.describe()
        ));
    }
    let profile_sections = [
        in_credentials.map(|s| (s, &credentials)),
        in_config.map(|s| (s, &config)),
    ];

    let region = get("AWS_REGION")
        .or_else(|| get("AWS_DEFAULT_REGION"))
        .or_else(|| {
            profile_sections
                .iter()
                .flatten()
                .find_map(|(section, _)| section.get("region"))
                .map(|entry| entry.value.clone())
                .filter(|v| !v.is_empty())
        });
    let chain = |source| Ok(Chain { source, region });

    // 1. The environment.
    if let Some(keys) = env_keys(&get)? {
        return chain(Source::Keys {
            keys,
            from: "the environment".to_owned(),
        });
    }
    // 2. The profile: the credentials file's keys, else the config file's.
    if let Some((keys, from)) = profile_keys(&profile, &profile_sections)? {
        return chain(Source::Keys { keys, from });
    }
    // 3. Web identity and container credentials, fetched by object_store.
    if get("AWS_WEB_IDENTITY_TOKEN_FILE").is_some() && get("AWS_ROLE_ARN").is_some() {
        return chain(Source::Provider(Provider::WebIdentity));
    }
    if get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").is_some()
        || (get("AWS_CONTAINER_CREDENTIALS_FULL_URI").is_some()
            && get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE").is_some())
    {
        return chain(Source::Provider(Provider::Container));
    }
    // 4. The instance role, unless the metadata service is off.
    if is_true("AWS_SKIP_SIGNATURE") {
        return chain(Source::Provider(Provider::Unsigned));
    }
    if is_true("AWS_EC2_METADATA_DISABLED") {
        return Err(nothing_found(
            &profile,
            (&credentials, in_credentials),
            (&config, in_config),
        ));
    }
    chain(Source::Provider(Provider::InstanceMetadata))
}

/// Keys from `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (with
/// `AWS_SESSION_TOKEN`); one without the other is an error.
fn env_keys(get: &impl Fn(&str) -> Option<String>) -> Result<Option<Keys>, String> {
    match (get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY")) {
        (Some(key_id), Some(secret)) => Ok(Some(Keys {
            key_id,
            secret,
            token: get("AWS_SESSION_TOKEN"),
        })),
        (Some(_), None) => {
            Err("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not".to_owned())
        }
        (None, Some(_)) => {
            Err("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not".to_owned())
        }
        (None, None) => Ok(None),
    }
}

/// The profile's keys, from the first of its sections that has them, with
/// where they were found; an error when a section gets its credentials in
/// a way gulp does not follow (a role, a process, SSO).
fn profile_keys(
    profile: &str,
    sections: &[Option<(&Section, &Shared)>; 2],
) -> Result<Option<(Keys, String)>, String> {
    for (section, file) in sections.iter().flatten() {
        if let Some(keys) = section.keys(&file.path)? {
            let from = format!("profile {profile:?} of {}", file.path.display());
            return Ok(Some((keys, from)));
        }
    }
    for (section, file) in sections.iter().flatten() {
        if let Some(entry) = NOT_FOLLOWED.iter().find_map(|key| section.get(key)) {
            return Err(format!(
                "{} line {}: the profile {profile:?} gets its credentials through `{}`, which \
                 gulp does not follow; give it the keys (`aws configure export-credentials \
                 --profile {profile} --format env` prints them)",
                file.path.display(),
                entry.line,
                entry.key
            ));
        }
    }
    Ok(None)
}

/// The error when no source gave credentials and the instance role is not
/// to be asked: every place looked in.
fn nothing_found(
    profile: &str,
    credentials: (&Shared, Option<&Section>),
    config: (&Shared, Option<&Section>),
) -> String {
    let in_profile = |(file, section): (&Shared, Option<&Section>)| match (&file.ini, section) {
        (None, _) => file.describe(),
        (Some(_), None) => format!("{} (no profile {profile:?})", file.path.display()),
        (Some(_), Some(_)) => format!(
            "{} (the profile {profile:?} has no keys)",
            file.path.display()
        ),
    };
    format!(
        "no credentials found; gulp looked in the environment (AWS_ACCESS_KEY_ID and \
         AWS_SECRET_ACCESS_KEY are not set), in the credentials file {} and the config file \
         {}, for web identity (AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN) and container \
         credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI); the instance \
         role was not asked for (AWS_EC2_METADATA_DISABLED=true)",
        in_profile(credentials),
        in_profile(config),
    )
}

/// One of the two shared files: where it is, and what it holds if it
/// exists.
struct Shared {
    path: PathBuf,
    /// `None`: the file does not exist (not an error, as for the AWS tools).
    ini: Option<Ini>,
    /// The variable that named it, if one did.
    named_by: Option<&'static str>,
}

impl Shared {
    /// Reads the file the variable `var` names (its value `given`, `~/`
    /// expanded), else `HOME/default`.
    fn load(
        var: &'static str,
        given: Option<String>,
        home: Option<&Path>,
        default: &str,
    ) -> Result<Shared, String> {
        let (path, named_by) = match given {
            Some(given) => (expand_home(&given, home), Some(var)),
            None => match home {
                Some(home) => (home.join(default), None),
                // No file to look in: described as the path it would be.
                None => (PathBuf::from(format!("~/{default}")), None),
            },
        };
        let ini = match std::fs::read(&path) {
            Ok(bytes) => {
                let text = String::from_utf8(bytes)
                    .map_err(|_| format!("{}: not UTF-8 text", path.display()))?;
                Some(Ini::parse(&text).map_err(|e| format!("{} {e}", path.display()))?)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        Ok(Shared {
            path,
            ini,
            named_by,
        })
    }

    /// The file's path, with what names it and whether it is missing.
    fn describe(&self) -> String {
        let notes: Vec<&str> = self
            .ini
            .is_none()
            .then_some("no such file")
            .into_iter()
            .chain(self.named_by)
            .collect();
        if notes.is_empty() {
            self.path.display().to_string()
        } else {
            format!("{} ({})", self.path.display(), notes.join(", "))
        }
    }
}

/// `~/rest` as `HOME/rest`, as the AWS tools expand the files' variables.
fn expand_home(path: &str, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if path == "~" => home.map_or_else(|| PathBuf::from(path), Path::to_owned),
        _ => PathBuf::from(path),
    }
}

/// An INI file as the AWS tools read theirs (Python's `configparser`):
/// `[section]` headers, `key = value` (or `key: value`) lines with keys
/// lower-cased and both sides trimmed, whole-line comments (`#`, `;`),
/// indented lines continuing the value above (nested settings such as
/// `s3 =` then `  max_concurrent_requests = 10`). A repeated section or key,
/// a key before any section and a line that is none of these are errors
/// naming the line, as they are for the AWS tools.
#[derive(Debug, Default)]
struct Ini {
    sections: Vec<Section>,
}

#[derive(Debug)]
struct Section {
    /// The header's text between the brackets, trimmed.
    name: String,
    /// Its header's line, 1-based.
    line: usize,
    entries: Vec<Entry>,
}

#[derive(Debug)]
struct Entry {
    key: String,
    value: String,
    /// 1-based.
    line: usize,
}

/// Where a file's text is wrong (the caller prefixes the file's path).
#[derive(Debug, PartialEq, Eq)]
struct IniError {
    line: usize,
    reason: String,
}

impl fmt::Display for IniError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl Ini {
    fn parse(text: &str) -> Result<Ini, IniError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut ini = Ini::default();
        // The indentation of the key whose value an indented line continues.
        let mut key_indent: Option<usize> = None;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let err = |reason: String| IniError { line, reason };
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
                continue;
            }
            let indent = raw.len() - raw.trim_start().len();
            if key_indent.is_some_and(|at| indent > at)
                && let Some(entry) = ini.sections.last_mut().and_then(|s| s.entries.last_mut())
            {
                entry.value.push('\n');
                entry.value.push_str(trimmed);
                continue;
            }
            if let Some(header) = trimmed.strip_prefix('[') {
                let (name, rest) = header
                    .rsplit_once(']')
                    .ok_or_else(|| err("a section header without `]`".to_owned()))?;
                let rest = rest.trim();
                if !(rest.is_empty() || rest.starts_with('#') || rest.starts_with(';')) {
                    return Err(err("text after the section header's `]`".to_owned()));
                }
                let name = name.trim();
                if name.is_empty() {
                    return Err(err("an empty section header".to_owned()));
                }
                if let Some(first) = ini.sections.iter().find(|s| s.name == name) {
                    return Err(err(format!(
                        "the section [{name}] again (first on line {})",
                        first.line
                    )));
                }
                ini.sections.push(Section {
                    name: name.to_owned(),
                    line,
                    entries: Vec::new(),
                });
                key_indent = None;
                continue;
            }
            let Some(split) = trimmed.find(['=', ':']) else {
                // The line itself is not quoted: it might be a secret.
                return Err(err(
                    "neither a [section] header nor `key = value`".to_owned()
                ));
            };
            let key = trimmed[..split].trim().to_ascii_lowercase();
            let value = trimmed[split + 1..].trim().to_owned();
            if key.is_empty() {
                return Err(err("a value without a key".to_owned()));
            }
            let Some(section) = ini.sections.last_mut() else {
                return Err(err(format!("`{key}` before any [section] header")));
            };
            if let Some(first) = section.get(&key) {
                return Err(err(format!(
                    "`{key}` again in [{}] (first on line {})",
                    section.name, first.line
                )));
            }
            section.entries.push(Entry { key, value, line });
            key_indent = Some(indent);
        }
        Ok(ini)
    }

    /// The section named `name` exactly (the credentials file's profiles).
    fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// The config file's profile `name`: `[profile NAME]` (the name may be
    /// quoted), or `[default]` for the default profile.
    fn config_profile(&self, name: &str) -> Option<&Section> {
        self.sections
            .iter()
            .find(|s| {
                s.name
                    .strip_prefix("profile")
                    .filter(|rest| rest.starts_with(char::is_whitespace))
                    .map(|rest| {
                        let rest = rest.trim();
                        rest.strip_prefix('"')
                            .and_then(|r| r.strip_suffix('"'))
                            .unwrap_or(rest)
                    })
                    == Some(name)
            })
            .or_else(|| {
                (name == "default")
                    .then(|| self.section("default"))
                    .flatten()
            })
    }
}

impl Section {
    fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }

    /// The section's keys; `None` if it has neither an id nor a secret, an
    /// error (naming `file` and the line) if it has one without the other.
    fn keys(&self, file: &Path) -> Result<Option<Keys>, String> {
        let value = |key: &str| self.get(key).filter(|e| !e.value.is_empty());
        match (value("aws_access_key_id"), value("aws_secret_access_key")) {
            (Some(id), Some(secret)) => Ok(Some(Keys {
                key_id: id.value.clone(),
                secret: secret.value.clone(),
                token: value("aws_session_token")
                    .or_else(|| value("aws_security_token"))
                    .map(|e| e.value.clone()),
            })),
            (None, None) => Ok(None),
            (Some(one), None) | (None, Some(one)) => {
                let other = if one.key == "aws_access_key_id" {
                    "aws_secret_access_key"
                } else {
                    "aws_access_key_id"
                };
                Err(format!(
                    "{} line {}: [{}] has `{}` but no `{other}`",
                    file.display(),
                    one.line,
                    self.name,
                    one.key
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A home directory with `.aws/credentials` and `.aws/config` as
    /// given (`None`: no such file), and the variables of a test.
    struct Home {
        dir: tempfile::TempDir,
        vars: HashMap<String, String>,
    }

    impl Home {
        fn new(credentials: Option<&str>, config: Option<&str>) -> Home {
            let dir = tempfile::tempdir().expect("temp dir");
            std::fs::create_dir(dir.path().join(".aws")).expect("mkdir");
            for (name, text) in [("credentials", credentials), ("config", config)] {
                if let Some(text) = text {
                    std::fs::write(dir.path().join(".aws").join(name), text).expect("write");
                }
            }
            let mut vars = HashMap::new();
            vars.insert("HOME".to_owned(), dir.path().display().to_string());
            Home { dir, vars }
        }

        fn set(mut self, name: &str, value: &str) -> Home {
            self.vars.insert(name.to_owned(), value.to_owned());
            self
        }

        fn resolve(&self) -> Result<Chain, String> {
            resolve(|name| self.vars.get(name).cloned())
        }

        fn keys(&self) -> (String, String) {
            match self.resolve().expect("resolves").source {
                Source::Keys { keys, from } => (keys.key_id, from),
                other => panic!("not keys: {other:?}"),
            }
        }

        fn path(&self, name: &str) -> String {
            self.dir
                .path()
                .join(".aws")
                .join(name)
                .display()
                .to_string()
        }
    }

    const CREDENTIALS: &str = "\
[default]
aws_access_key_id = DEFAULTID
aws_secret_access_key = defaultsecret

[work]
# a comment
AWS_Access_Key_Id=WORKID
aws_secret_access_key : work/secret+with=signs
aws_session_token = worktoken
region = eu-north-1
";

    const CONFIG: &str = "\
[default]
region = eu-west-1

[profile work]
region = us-west-2
s3 =
    max_concurrent_requests = 10
    addressing_style = path

[profile \"only in config\"]
aws_access_key_id = CONFIGID
aws_secret_access_key = configsecret

[profile sso]
sso_session = corp
sso_account_id = 1234

[sso-session corp]
sso_region = us-east-1
";

    #[test]
    fn the_environment_comes_first() {
        let home = Home::new(Some(CREDENTIALS), Some(CONFIG))
            .set("AWS_ACCESS_KEY_ID", "ENVID")
            .set("AWS_SECRET_ACCESS_KEY", "envsecret")
            .set("AWS_SESSION_TOKEN", "envtoken");
        let chain = home.resolve().expect("resolves");
        assert_eq!(
            chain.source,
            Source::Keys {
                keys: Keys {
                    key_id: "ENVID".into(),
                    secret: "envsecret".into(),
                    token: Some("envtoken".into()),
                },
                from: "the environment".into(),
            }
        );
        assert_eq!(chain.region.as_deref(), Some("eu-west-1"));
        // Half a key in the environment is an error, not a fall to the file.
        let half = Home::new(Some(CREDENTIALS), None).set("AWS_ACCESS_KEY_ID", "ENVID");
        assert!(
            half.resolve()
                .expect_err("half")
                .contains("AWS_SECRET_ACCESS_KEY is not")
        );
        // Empty variables are unset.
        let empty = Home::new(Some(CREDENTIALS), None)
            .set("AWS_ACCESS_KEY_ID", "")
            .set("AWS_SECRET_ACCESS_KEY", "");
        assert_eq!(empty.keys().0, "DEFAULTID");
    }

    #[test]
    fn then_the_profile_of_the_credentials_file_then_of_the_config_file() {
        let home = Home::new(Some(CREDENTIALS), Some(CONFIG));
        assert_eq!(
            home.keys(),
            (
                "DEFAULTID".into(),
                format!("profile \"default\" of {}", home.path("credentials"))
            )
        );
        let work = Home::new(Some(CREDENTIALS), Some(CONFIG)).set("AWS_PROFILE", "work");
        let chain = work.resolve().expect("work");
        let Source::Keys { keys, .. } = &chain.source else {
            panic!("{chain:?}")
        };
        assert_eq!(
            (
                keys.key_id.as_str(),
                keys.secret.as_str(),
                keys.token.as_deref()
            ),
            ("WORKID", "work/secret+with=signs", Some("worktoken"))
        );
        // The credentials file's region over the config file's, as boto3
        // merges them; the environment's over both.
        assert_eq!(chain.region.as_deref(), Some("eu-north-1"));
        let env_region = work.set("AWS_DEFAULT_REGION", "ap-south-1");
        assert_eq!(
            env_region.resolve().expect("r").region.as_deref(),
            Some("ap-south-1")
        );
        let env_region = env_region.set("AWS_REGION", "sa-east-1");
        assert_eq!(
            env_region.resolve().expect("r").region.as_deref(),
            Some("sa-east-1")
        );

        let config_only =
            Home::new(Some(CREDENTIALS), Some(CONFIG)).set("AWS_PROFILE", "only in config");
        assert_eq!(
            config_only.keys(),
            (
                "CONFIGID".into(),
                format!(
                    "profile \"only in config\" of {}",
                    config_only.path("config")
                )
            )
        );
        // The files the variables name, `~/` expanded.
        let elsewhere = Home::new(None, None)
            .set("AWS_SHARED_CREDENTIALS_FILE", "~/keys.ini")
            .set("AWS_PROFILE", "work");
        std::fs::write(elsewhere.dir.path().join("keys.ini"), CREDENTIALS).expect("write");
        assert_eq!(elsewhere.keys().0, "WORKID");
    }

    #[test]
    fn then_web_identity_and_containers_then_the_instance_role() {
        let provider = |home: &Home| home.resolve().expect("resolves").source;
        let none = Home::new(None, Some(CONFIG));
        assert_eq!(
            provider(&none),
            Source::Provider(Provider::InstanceMetadata)
        );
        assert_eq!(
            none.resolve().expect("r").region.as_deref(),
            Some("eu-west-1")
        );
        let web = Home::new(None, None)
            .set("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/token")
            .set("AWS_ROLE_ARN", "arn:aws:iam::1:role/r")
            .set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials");
        assert_eq!(provider(&web), Source::Provider(Provider::WebIdentity));
        // The profile's keys before web identity.
        let both = Home::new(Some(CREDENTIALS), None)
            .set("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/token")
            .set("AWS_ROLE_ARN", "arn:aws:iam::1:role/r");
        assert_eq!(both.keys().0, "DEFAULTID");
        let task = Home::new(None, None).set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/c");
        assert_eq!(provider(&task), Source::Provider(Provider::Container));
        let unsigned = Home::new(None, None).set("AWS_SKIP_SIGNATURE", "true");
        assert_eq!(provider(&unsigned), Source::Provider(Provider::Unsigned));
    }

    #[test]
    fn the_metadata_service_off_ends_the_chain_with_where_gulp_looked() {
        for value in ["true", "TRUE", "True"] {
            let home = Home::new(Some(CREDENTIALS), None)
                .set("AWS_PROFILE", "work")
                .set("AWS_ACCESS_KEY_ID", "")
                .set("AWS_EC2_METADATA_DISABLED", value);
            assert_eq!(home.keys().0, "WORKID", "the file's keys still work");
            let nothing = Home::new(Some("[default]\nregion = x\n"), None)
                .set("AWS_EC2_METADATA_DISABLED", value);
            let err = nothing.resolve().expect_err("no credentials");
            for said in [
                "no credentials found",
                "AWS_ACCESS_KEY_ID",
                &format!(
                    "{} (the profile \"default\" has no keys)",
                    nothing.path("credentials")
                ),
                &format!("{} (no such file)", nothing.path("config")),
                "AWS_WEB_IDENTITY_TOKEN_FILE",
                "AWS_EC2_METADATA_DISABLED=true",
            ] {
                assert!(err.contains(said), "{said:?} not in {err}");
            }
        }
        // Anything but "true" leaves the service on, as for the AWS tools.
        let on = Home::new(None, None).set("AWS_EC2_METADATA_DISABLED", "1");
        assert_eq!(
            on.resolve().expect("r").source,
            Source::Provider(Provider::InstanceMetadata)
        );
    }

    #[test]
    fn a_named_profile_that_neither_file_has_is_an_error_naming_both() {
        let home = Home::new(Some(CREDENTIALS), None)
            .set("AWS_PROFILE", "nope")
            .set("AWS_ACCESS_KEY_ID", "ENVID")
            .set("AWS_SECRET_ACCESS_KEY", "envsecret");
        let err = home.resolve().expect_err("no such profile");
        assert_eq!(
            err,
            format!(
                "the profile \"nope\" (AWS_PROFILE) is in neither {} nor {} (no such file)",
                home.path("credentials"),
                home.path("config")
            )
        );
        // The default profile may be missing.
        assert!(Home::new(Some("[work]\n"), None).resolve().is_ok());
    }

    #[test]
    fn a_profile_that_gets_keys_another_way_is_an_error_not_the_instance_role() {
        let home = Home::new(None, Some(CONFIG)).set("AWS_PROFILE", "sso");
        let err = home.resolve().expect_err("sso");
        assert!(
            err.starts_with(&format!(
                "{} line 15: the profile \"sso\"",
                home.path("config")
            )) && err.contains("`sso_session`")
                && err.contains("aws configure export-credentials --profile sso"),
            "{err}"
        );
        let half = Home::new(Some("[default]\naws_access_key_id = X\n"), None);
        assert_eq!(
            half.resolve().expect_err("half"),
            format!(
                "{} line 2: [default] has `aws_access_key_id` but no `aws_secret_access_key`",
                half.path("credentials")
            )
        );
    }

    #[test]
    fn the_parser_reads_what_configparser_reads_and_names_the_line_of_what_it_refuses() {
        let ini = Ini::parse(
            "\u{feff}; top\r\n[a] # note\r\nk = v = w\r\n  more\r\n\r\n[ b ]\n  x=1\n  y :2\n",
        )
        .expect("parses");
        let names: Vec<&str> = ini.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let a = ini.section("a").expect("a");
        assert_eq!(
            a.get("k").map(|e| (e.value.as_str(), e.line)),
            Some(("v = w\nmore", 3))
        );
        let b = ini.section("b").expect("b");
        assert_eq!(b.get("y").map(|e| e.value.as_str()), Some("2"));
        assert!(Ini::parse("").expect("empty").sections.is_empty());

        let refused = |text: &str| Ini::parse(text).expect_err(text).to_string();
        assert_eq!(
            refused("k = v\n"),
            "line 1: `k` before any [section] header"
        );
        assert_eq!(
            refused("[a]\nAKIASECRETLOOKING\n"),
            "line 2: neither a [section] header nor `key = value`"
        );
        assert_eq!(
            refused("[a]\n[b]\n[a]\n"),
            "line 3: the section [a] again (first on line 1)"
        );
        assert_eq!(
            refused("[a]\nk=1\nK=2\n"),
            "line 3: `k` again in [a] (first on line 2)"
        );
        assert_eq!(refused("[a\n"), "line 1: a section header without `]`");
        assert_eq!(refused("[]\n"), "line 1: an empty section header");
        assert_eq!(refused("[a]\n= v\n"), "line 2: a value without a key");
        assert_eq!(
            refused("[a] x\n"),
            "line 1: text after the section header's `]`"
        );

        // The file is named with the line.
        let home = Home::new(Some("[default]\noops\n"), None);
        assert_eq!(
            home.resolve().expect_err("bad file"),
            format!(
                "{} line 2: neither a [section] header nor `key = value`",
                home.path("credentials")
            )
        );
    }
}
