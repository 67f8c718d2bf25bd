//! A small HTTP server for the local stand-ins of outside services (SMS and CAPTCHA providers,
//! identity providers, webhook receivers, the hosts of status lists, relying parties' pages):
//! hyper on 127.0.0.1:0, answering from routes whose handlers are plain closures over state the
//! test owns, and recording every request it received. Connections are kept alive; dropping the
//! server closes its port and every connection.
//!
//! Handlers run on a blocking thread, so one may block (call the server under test, or stall
//! past a client's timeout) without holding up the other connections.

use std::{
    collections::BTreeMap,
    convert::Infallible,
    net::SocketAddr,
    sync::{Arc, Mutex, PoisonError},
    thread::JoinHandle,
    time::Duration,
};

use http_body_util::{BodyExt, Full};
use hyper::{
    body::{Bytes, Incoming},
    server::conn::http1,
    service::service_fn,
    Request, Response,
};
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// What answers the requests of one route.
pub type Handler = Arc<dyn Fn(&StubRequest) -> StubResponse + Send + Sync>;

/// One request as the stub received it.
#[derive(Clone, Debug)]
pub struct StubRequest {
    pub method: String,
    /// The path of the target, without its query.
    pub path: String,
    /// The query string, without the `?` (`None`: the target has no `?`).
    pub query: Option<String>,
    /// The header fields in the order received, names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl StubRequest {
    /// The first value of the header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The request target: the path and, if there is one, `?` and the query.
    pub fn target(&self) -> String {
        match &self.query {
            Some(q) => format!("{}?{q}", self.path),
            None => self.path.clone(),
        }
    }

    /// The decoded query parameters (the last of a repeated name).
    pub fn query_params(&self) -> BTreeMap<String, String> {
        let query = self.query.as_deref().unwrap_or_default();
        form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect()
    }

    /// The decoded fields of an `application/x-www-form-urlencoded` body (the last of a
    /// repeated name).
    pub fn form(&self) -> BTreeMap<String, String> {
        form_urlencoded::parse(&self.body).into_owned().collect()
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The user and password of an `Authorization: Basic` header.
    pub fn basic_auth(&self) -> Option<(String, String)> {
        use base64::Engine;
        let (scheme, rest) = self.header("authorization")?.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("basic") {
            return None;
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(rest.trim())
            .ok()?;
        let text = String::from_utf8(bytes).ok()?;
        let (user, password) = text.split_once(':')?;
        Some((user.to_owned(), password.to_owned()))
    }

    /// The token of an `Authorization: Bearer` header.
    pub fn bearer(&self) -> Option<&str> {
        self.header("authorization")?.strip_prefix("Bearer ")
    }
}

/// An answer: a status, header fields and a body (its length is added when sent).
#[derive(Clone, Debug)]
pub struct StubResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl StubResponse {
    /// `status` with no body.
    pub fn new(status: u16) -> Self {
        StubResponse {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// `status` with `body` as `application/json`.
    pub fn json(status: u16, body: &Value) -> Self {
        Self::new(status).with_body("application/json", body.to_string())
    }

    /// `status` with `body` of the type `content_type`.
    pub fn text(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self::new(status).with_body(content_type, body)
    }

    /// `302 Found` to `location`.
    pub fn found(location: &str) -> Self {
        Self::new(302).header("location", location)
    }

    /// Adds the header field `name: value`.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    fn with_body(self, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        StubResponse {
            body: body.into(),
            ..self.header("content-type", content_type)
        }
    }
}

/// A method (or any) and a path (or a prefix of paths), and the handler of the requests that
/// match them.
#[derive(Clone)]
pub struct Route {
    method: Option<String>,
    path: String,
    prefix: bool,
    handler: Handler,
}

impl Route {
    /// `method` requests to exactly `path`.
    pub fn new(
        method: &str,
        path: &str,
        handler: impl Fn(&StubRequest) -> StubResponse + Send + Sync + 'static,
    ) -> Self {
        Route {
            method: Some(method.to_ascii_uppercase()),
            path: path.to_owned(),
            prefix: false,
            handler: Arc::new(handler),
        }
    }

    pub fn get(
        path: &str,
        handler: impl Fn(&StubRequest) -> StubResponse + Send + Sync + 'static,
    ) -> Self {
        Self::new("GET", path, handler)
    }

    pub fn post(
        path: &str,
        handler: impl Fn(&StubRequest) -> StubResponse + Send + Sync + 'static,
    ) -> Self {
        Self::new("POST", path, handler)
    }

    /// `method` requests to every path that starts with `prefix`.
    pub fn prefix(
        method: &str,
        prefix: &str,
        handler: impl Fn(&StubRequest) -> StubResponse + Send + Sync + 'static,
    ) -> Self {
        Route {
            prefix: true,
            ..Self::new(method, prefix, handler)
        }
    }

    /// Every request, whatever its method and path.
    pub fn any(handler: impl Fn(&StubRequest) -> StubResponse + Send + Sync + 'static) -> Self {
        Route {
            method: None,
            path: String::new(),
            prefix: true,
            handler: Arc::new(handler),
        }
    }

    fn matches(&self, request: &StubRequest) -> bool {
        self.method.as_ref().is_none_or(|m| *m == request.method)
            && if self.prefix {
                request.path.starts_with(&self.path)
            } else {
                request.path == self.path
            }
    }
}

/// An HTTP/1.1 server on 127.0.0.1 answering from its routes, the first that matches (none:
/// `404`); stopped on drop.
pub struct StubServer {
    addr: SocketAddr,
    url: String,
    received: Arc<Mutex<Vec<StubRequest>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl StubServer {
    #[allow(
        clippy::unwrap_used,
        reason = "test support: a stand-in that cannot start fails the test that starts it"
    )]
    pub fn start(routes: Vec<Route>) -> StubServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let routes: Arc<[Route]> = routes.into();
        let log = received.clone();
        let thread = std::thread::Builder::new()
            .name(format!("stub server {addr}"))
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(serve(listener, routes, log, stopped));
                // Handlers still running finish on their own; their answers go nowhere.
                rt.shutdown_background();
            })
            .unwrap();
        StubServer {
            addr,
            url: format!("http://{addr}"),
            received,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in arrival order (each recorded before its handler runs).
    pub fn requests(&self) -> Vec<StubRequest> {
        lock(&self.received).clone()
    }

    /// The requests received so far to exactly `path`.
    pub fn requests_to(&self, path: &str) -> Vec<StubRequest> {
        lock(&self.received)
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }
}

impl Drop for StubServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Accepts connections until `stopped`; then drops the listener and every connection.
async fn serve(
    listener: std::net::TcpListener,
    routes: Arc<[Route]>,
    log: Arc<Mutex<Vec<StubRequest>>>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of descriptors, say: try again shortly.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let (routes, log) = (routes.clone(), log.clone());
                let service =
                    service_fn(move |request| answer(request, routes.clone(), log.clone()));
                connections.spawn(async move {
                    // A malformed request ends its connection (hyper answers 400 first).
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        }
    }
}

/// Reads the whole request, records it and answers from the first route that matches.
async fn answer(
    request: Request<Incoming>,
    routes: Arc<[Route]>,
    log: Arc<Mutex<Vec<StubRequest>>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (head, body) = request.into_parts();
    let Ok(body) = body.collect().await else {
        return Ok(reply(StubResponse::text(
            400,
            "text/plain",
            "unreadable body",
        )));
    };
    let request = StubRequest {
        method: head.method.as_str().to_owned(),
        path: head.uri.path().to_owned(),
        query: head.uri.query().map(str::to_owned),
        headers: head
            .headers
            .iter()
            .map(|(k, v)| {
                let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
                (k.as_str().to_owned(), value)
            })
            .collect(),
        body: body.to_bytes().to_vec(),
    };
    lock(&log).push(request.clone());
    let Some(route) = routes.iter().find(|r| r.matches(&request)) else {
        return Ok(reply(StubResponse::text(404, "text/plain", "no route")));
    };
    let handler = route.handler.clone();
    let answer = tokio::task::spawn_blocking(move || handler(&request))
        .await
        .unwrap_or_else(|_| StubResponse::text(500, "text/plain", "the handler panicked"));
    Ok(reply(answer))
}

fn reply(answer: StubResponse) -> Response<Full<Bytes>> {
    let mut builder = Response::builder().status(answer.status);
    for (name, value) in &answer.headers {
        builder = builder.header(name, value);
    }
    builder
        .body(Full::new(Bytes::from(answer.body)))
        .unwrap_or_else(|e| {
            let mut bad = Response::new(Full::new(Bytes::from(format!("bad answer: {e}"))));
            *bad.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
            bad
        })
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use serde_json::json;

    use super::*;

    /// Writes `raw` on a new connection and reads until the server closes it.
    fn exchange(addr: SocketAddr, raw: &str) -> String {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.write_all(raw.as_bytes()).unwrap();
        let mut out = String::new();
        let _ = stream.read_to_string(&mut out);
        out
    }

    #[test]
    fn the_stub_server_answers_from_its_routes_and_records_each_request() {
        let hits = Arc::new(Mutex::new(0));
        let counted = hits.clone();
        let server = StubServer::start(vec![
            Route::get("/exact", move |req| {
                *counted.lock().unwrap() += 1;
                StubResponse::json(200, &json!({"q": req.query_params()}))
                    .header("retry-after", "7")
            }),
            Route::prefix("POST", "/under/", |req| {
                StubResponse::text(201, "text/plain", format!("{} {}", req.path, req.text()))
            }),
            Route::get("/panics", |_| panic!("a handler that fails")),
        ]);
        let client = reqwest::blocking::Client::new();
        let url = server.url();

        let r = client
            .get(format!("{url}/exact?a=1&b=x%20y"))
            .header("x-probe", "one")
            .send()
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["retry-after"], "7");
        assert_eq!(r.headers()["content-type"], "application/json");
        assert_eq!(
            r.json::<Value>().unwrap(),
            json!({"q": {"a": "1", "b": "x y"}})
        );

        let r = client
            .post(format!("{url}/under/deep/path"))
            .body("a body")
            .send()
            .unwrap();
        assert_eq!(r.status(), 201);
        assert_eq!(r.text().unwrap(), "/under/deep/path a body");

        // The wrong method, an unknown path, a handler's panic.
        assert_eq!(
            client.post(format!("{url}/exact")).send().unwrap().status(),
            404
        );
        assert_eq!(
            client
                .get(format!("{url}/under/x"))
                .send()
                .unwrap()
                .status(),
            404
        );
        assert_eq!(
            client.get(format!("{url}/panics")).send().unwrap().status(),
            500
        );
        assert_eq!(*hits.lock().unwrap(), 1);

        let seen = server.requests();
        let targets: Vec<(String, String)> = seen
            .iter()
            .map(|r| (r.method.clone(), r.target()))
            .collect();
        assert_eq!(
            targets,
            [
                ("GET", "/exact?a=1&b=x%20y"),
                ("POST", "/under/deep/path"),
                ("POST", "/exact"),
                ("GET", "/under/x"),
                ("GET", "/panics"),
            ]
            .map(|(m, t)| (m.to_owned(), t.to_owned()))
        );
        assert_eq!(seen[0].header("X-Probe"), Some("one"));
        assert_eq!(seen[0].query.as_deref(), Some("a=1&b=x%20y"));
        assert_eq!(seen[1].body, b"a body");
        assert_eq!(server.requests_to("/exact").len(), 2);
    }

    #[test]
    fn the_stub_server_keeps_connections_alive_survives_garbage_and_stops_on_drop() {
        let server = StubServer::start(vec![Route::any(|req| {
            StubResponse::text(200, "text/plain", req.text())
        })]);
        let addr = server.addr();

        // Two requests on one connection, the second asking to close it.
        let out = exchange(
            addr,
            "POST /one HTTP/1.1\r\nhost: x\r\ncontent-length: 3\r\n\r\nabc\
             POST /two HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n\
             2\r\nde\r\n0\r\n\r\n",
        );
        assert_eq!(out.matches("HTTP/1.1 200 OK").count(), 2, "{out}");
        assert!(out.ends_with("de"), "{out}");

        // Garbage is refused, and the server goes on.
        let out = exchange(addr, "NOT HTTP AT ALL\r\n\r\n");
        assert!(out.is_empty() || out.starts_with("HTTP/1.1 400"), "{out}");
        let out = exchange(
            addr,
            "GET /three HTTP/1.1\r\nhost: x\r\ncontent-length: x\r\n\r\n",
        );
        assert!(out.is_empty() || out.starts_with("HTTP/1.1 400"), "{out}");
        let out = exchange(
            addr,
            "GET /four HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
        );
        assert!(out.starts_with("HTTP/1.1 200 OK"), "{out}");
        assert_eq!(server.requests_to("/four").len(), 1);

        // An idle open connection does not keep the server up.
        let idle = std::net::TcpStream::connect(addr).unwrap();
        drop(server);
        assert!(
            std::net::TcpStream::connect(addr).is_err(),
            "{addr} still listens"
        );
        drop(idle);
    }
}
