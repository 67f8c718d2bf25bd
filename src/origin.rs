//! Browser origins as browsers serialize them (`scheme://host[:port]`). The configuration
//! checks `server.dashboard_origins` with it, and the HTTP layer compares `Origin` headers and
//! tenants' `allowed_origins` with it; its own file, below both, so the configuration does not
//! reach into the HTTP layer.

/// An origin as browsers serialize it, `scheme://host[:port]`: the scheme and host
/// lowercased, an internationalized host in punycode, a default port dropped. `None` for
/// anything that is not an origin: a path other than `/`, a query, a fragment, user
/// information, no host, or a special scheme other than `http` and `https`. Non-special
/// schemes with a host (`capacitor://localhost`, `chrome-extension://id`) are origins of
/// app shells and extensions and are kept.
pub fn normalize_origin(input: &str) -> Option<String> {
    if input.len() > 300 || input.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let url = url::Url::parse(input).ok()?;
    let special = matches!(url.scheme(), "ws" | "wss" | "ftp" | "file");
    let path_ok = url.path().is_empty() || url.path() == "/";
    if special
        || !path_ok
        || url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return None;
    }
    let host = url.host_str().filter(|h| !h.is_empty())?;
    Some(match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_normalized_as_browsers_send_them() {
        let n = |s: &str| normalize_origin(s);
        assert_eq!(
            n("https://app.example.com").as_deref(),
            Some("https://app.example.com")
        );
        assert_eq!(
            n("https://App.Example.COM/").as_deref(),
            Some("https://app.example.com")
        );
        assert_eq!(
            n("HTTPS://example.com:443").as_deref(),
            Some("https://example.com")
        );
        assert_eq!(
            n("http://localhost:3000").as_deref(),
            Some("http://localhost:3000")
        );
        assert_eq!(
            n("http://127.0.0.1:8080").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(n("http://[::1]:5173").as_deref(), Some("http://[::1]:5173"));
        assert_eq!(
            n("https://bücher.example").as_deref(),
            Some("https://xn--bcher-kva.example")
        );
        assert_eq!(
            n("capacitor://localhost").as_deref(),
            Some("capacitor://localhost")
        );
        assert_eq!(
            n("chrome-extension://abcdefghijklmnop").as_deref(),
            Some("chrome-extension://abcdefghijklmnop")
        );
        for bad in [
            "",
            "null",
            "example.com",
            "https://example.com/app",
            "https://example.com?x=1",
            "https://example.com?",
            "https://example.com#f",
            "https://user@example.com",
            "https://user:pw@example.com",
            "https://",
            "file:///etc/passwd",
            "wss://example.com",
            "https://exa mple.com",
            " https://example.com",
            "https://example.com:99999",
        ] {
            assert_eq!(n(bad), None, "{bad:?}");
        }
    }
}
