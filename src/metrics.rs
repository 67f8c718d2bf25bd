//! Prometheus metrics: requests by route and status, latency by route, tenant actors running.

use prometheus_client::{
    encoding::{text::encode, EncodeLabelSet},
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

type LatencyFamily = Family<RouteLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 0.25 ms .. ~8 s
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.00025, 2.0, 16,
    ))
}

pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: LatencyFamily,
    tenants_running: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("tessera");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = LatencyFamily::new_with_constructor(latency_histogram);
        let tenants_running = Gauge::default();
        registry.register(
            "http_requests",
            "HTTP requests by method, route template and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "HTTP request latency by route template",
            latency.clone(),
        );
        registry.register(
            "tenant_actors_running",
            "Tenant supervisor actors running now",
            tenants_running.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
            tenants_running,
        }
    }

    pub fn observe(&self, method: &str, route: &str, status: u16, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method.to_owned(),
                route: route.to_owned(),
                status,
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels {
                route: route.to_owned(),
            })
            .observe(seconds);
    }

    /// The text exposition, with the running-tenant gauge set to `tenants_running`.
    pub fn render(&self, tenants_running: usize) -> String {
        self.tenants_running
            .set(i64::try_from(tenants_running).unwrap_or(i64::MAX));
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}
