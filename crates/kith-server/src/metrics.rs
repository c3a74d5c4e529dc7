//! Request counts and latency histograms per route, in Prometheus' text format.

use std::fmt::Write as _;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use prometheus::{
    CounterVec, Encoder, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry, TextEncoder,
};

/// The HTTP metrics.
#[derive(Clone, Debug)]
pub struct HttpMetrics {
    requests: IntCounterVec,
    latency: HistogramVec,
    parts: CounterVec,
}

impl HttpMetrics {
    /// Creates the metrics and registers them.
    pub fn new(registry: &Registry) -> HttpMetrics {
        let requests = IntCounterVec::new(
            Opts::new("kith_http_requests_total", "HTTP requests by route, method and status"),
            &["route", "method", "status"],
        )
        .expect("valid metric");
        let buckets = vec![
            0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1,
            0.25, 0.5, 1.0, 2.5,
        ];
        let latency = HistogramVec::new(
            HistogramOpts::new("kith_http_request_duration_seconds", "HTTP request latency")
                .buckets(buckets),
            &["route", "method"],
        )
        .expect("valid metric");
        let parts = CounterVec::new(
            Opts::new(
                "kith_http_time_seconds_total",
                "Time requests spent, by route, method and part: store and cache (waiting on \
                 them), and of the store's time the steps that buy a guarantee (key-claim, \
                 key-read, key-finish, edge, intent, index)",
            ),
            &["route", "method", "part"],
        )
        .expect("valid metric");
        let _ = registry.register(Box::new(requests.clone()));
        let _ = registry.register(Box::new(latency.clone()));
        let _ = registry.register(Box::new(parts.clone()));
        HttpMetrics { requests, latency, parts }
    }
}

/// The method's label: a standard method's name, `other` for anything else, so made-up
/// methods cannot add series without end (each series is kept for the process's life).
pub fn method_label(method: &Method) -> &'static str {
    const STANDARD: [Method; 9] = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
        Method::OPTIONS,
        Method::CONNECT,
        Method::TRACE,
    ];
    STANDARD.iter().find(|m| *m == method).map_or("other", Method::as_str)
}

/// Middleware that counts and times every request under its route template, and tells the
/// client where the time went: `Server-Timing: store;dur=…, cache;dur=…, total;dur=…` in
/// milliseconds (Twibo's per-request timers). `store` is the time spent waiting on the
/// storage engine and `cache` on Redis, summed over the request's calls
/// ([`kith_feed::timing`]); `total` is the handler's whole time, the body's transfer
/// excluded. Then, of the store's time, each guarantee's step the engine charged
/// (`key-claim;dur=…`, [`kith_store::price`]), where not zero. The store and cache time
/// and the steps' are also summed per route in `kith_http_time_seconds_total`.
pub async fn track(State(m): State<HttpMetrics>, req: Request, next: Next) -> Response {
    // A cheap clone (an Arc), no string copies on the hot path.
    let route = req.extensions().get::<MatchedPath>().cloned();
    let method = method_label(req.method());
    let start = Instant::now();
    let (mut response, spans) = kith_feed::timing::timed(next.run(req)).await;
    let total = start.elapsed();
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    let labels = [route, method];
    m.latency.with_label_values(&labels).observe(total.as_secs_f64());
    m.requests.with_label_values(&[route, method, response.status().as_str()]).inc();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    let mut value = format!(
        "store;dur={:.3}, cache;dur={:.3}, total;dur={:.3}",
        ms(spans.store),
        ms(spans.cache),
        ms(total)
    );
    let count = |part: &str, d: std::time::Duration| {
        if !d.is_zero() {
            m.parts.with_label_values(&[route, method, part]).inc_by(d.as_secs_f64());
        }
    };
    count("store", spans.store);
    count("cache", spans.cache);
    for p in kith_store::price::Price::ALL {
        let d = spans.prices[p as usize];
        count(p.name(), d);
        if !d.is_zero() {
            let _ = write!(value, ", {};dur={:.3}", p.name(), ms(d));
        }
    }
    if let Ok(v) = HeaderValue::from_str(&value) {
        response.headers_mut().insert(SERVER_TIMING, v);
    }
    response
}

/// The `Server-Timing` header (W3C Server Timing).
pub const SERVER_TIMING: HeaderName = HeaderName::from_static("server-timing");

/// The registry's metrics as Prometheus text.
pub fn render(registry: &Registry) -> String {
    let mut buf = Vec::new();
    TextEncoder::new().encode(&registry.gather(), &mut buf).expect("text encoding");
    String::from_utf8(buf).expect("prometheus text is UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_up_methods_share_one_label() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::DELETE), "DELETE");
        for made_up in ["FROB", "X".repeat(4000).as_str(), "get"] {
            let m = Method::from_bytes(made_up.as_bytes()).unwrap();
            assert_eq!(method_label(&m), "other");
        }
    }
}
