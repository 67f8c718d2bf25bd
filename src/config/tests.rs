use super::*;

#[test]
fn the_shipped_config_toml_is_valid_and_matches_the_defaults() {
    let text = include_str!("../../config.toml");
    let c = Config::from_toml_str(text, &Overrides::default()).unwrap();
    let d = Config::default();
    assert_eq!(c.server.listen, d.server.listen);
    assert_eq!(c.security.argon2_m_cost_kib, 19456);
    assert_eq!(c.security.argon2_t_cost, 2);
    assert_eq!(c.security.argon2_p_cost, 1);
    assert!(!c.security.allow_insecure_master_key_file_mode);
    assert!(!d.security.allow_insecure_master_key_file_mode);
}

#[test]
fn errors_name_the_key() {
    let err = Config::from_toml_str("[server]\nlisten = 5\n", &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("server.listen"), "{err}");
    let err = Config::from_toml_str("[server]\nlisten = \"nope\"\n", &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("server.listen"), "{err}");
    let err = Config::from_toml_str("[server]\nlistn = \"x\"\n", &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("listn"), "{err}");
    let err = Config::from_toml_str(
        "[server]\ntrusted_proxies = [\"10.0.0.0/33\"]\n",
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("server.trusted_proxies"), "{err}");
    let err = Config::from_toml_str(
        "[captcha]\nprovider = \"turnstile\"\n",
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("captcha.secret"), "{err}");
    for (toml, key) in [
        (
            "[server]\nmetrics_listen = \"9090\"\n",
            "server.metrics_listen",
        ),
        ("[server]\ndocs_url = \"docs\"\n", "server.docs_url"),
        (
            "[server]\nheader_read_timeout_secs = 0\n",
            "server.header_read_timeout_secs",
        ),
        (
            "[server]\nheader_read_timeout_secs = 30\nkeep_alive_timeout_secs = 5\n",
            "server.keep_alive_timeout_secs",
        ),
    ] {
        let err = Config::from_toml_str(toml, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains(key), "{toml}: {err}");
    }
}

#[test]
fn overrides_win_and_relative_paths_sit_under_the_data_dir() {
    let c = Config::from_toml_str(
        "",
        &Overrides {
            listen: Some("127.0.0.1:0".into()),
            data_dir: Some("/tmp/x".into()),
        },
    )
    .unwrap();
    assert_eq!(c.server.listen, "127.0.0.1:0");
    assert_eq!(c.master_key_path(), PathBuf::from("/tmp/x/master.key"));
    assert_eq!(c.trusted_proxies().unwrap(), Vec::<IpNet>::new());
    let c = Config::from_toml_str(
        "[server]\ntrusted_proxies = [\"10.0.0.0/8\", \"127.0.0.1\"]\n",
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(c.trusted_proxies().unwrap().len(), 2);
}
