//! `[sdk]`: the SDK support policy file, read and checked when the configuration is loaded.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::ConfigError;

/// The SDK support policy document (spec 2.14) that `GET /v1/sdk-support-policy` serves.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SdkConfig {
    /// The operator's JSON file holding the document; relative paths are under the data
    /// directory. Read and checked once, when the config is loaded: a bad file stops the server.
    /// Absent: the route answers 404 `sdk_policy/not_configured`.
    pub policy_file: Option<PathBuf>,
    /// The document read from `policy_file` by [`Config::load`], already checked.
    #[serde(skip)]
    pub policy: Option<std::sync::Arc<crate::http::sdk_policy::SdkPolicy>>,
}

impl SdkConfig {
    /// Reads and checks the document `policy_file` names, if any; `data_dir` resolves a
    /// relative path.
    pub(super) fn load_policy(
        &self,
        data_dir: &Path,
    ) -> Result<Option<std::sync::Arc<crate::http::sdk_policy::SdkPolicy>>, ConfigError> {
        let Some(file) = &self.policy_file else {
            return Ok(None);
        };
        let error = |reason: String| ConfigError::Key {
            key: "sdk.policy_file",
            reason,
        };
        if file.as_os_str().is_empty() {
            return Err(error(
                "must not be empty (leave it out to serve no policy)".into(),
            ));
        }
        let path = if file.is_absolute() {
            file.clone()
        } else {
            data_dir.join(file)
        };
        crate::http::sdk_policy::SdkPolicy::load(&path)
            .map(|p| Some(std::sync::Arc::new(p)))
            .map_err(error)
    }
}
