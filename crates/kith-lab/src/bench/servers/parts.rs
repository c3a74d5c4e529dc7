//! Where the servers' time went per request, by part: read from their metrics
//! (`kith_http_time_seconds_total`: store and cache, and the store steps that buy a
//! guarantee) before and after a load, per HTTP method, so that each operation of a load
//! gets its own (a switch's two operations differ by method).

use std::collections::BTreeMap;

use anyhow::{Context, Result};

/// Totals read from the servers' metrics: (method, part) → seconds, and method → requests.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Totals {
    seconds: BTreeMap<(String, String), f64>,
    requests: BTreeMap<String, f64>,
}

/// Routes whose requests are the benchmark's own, not the load's.
const OWN_ROUTES: [&str; 2] = ["/metrics", "/stats"];

/// The label `name`'s value in a Prometheus sample's `{…}` (values hold no quotes here).
fn label<'a>(labels: &'a str, name: &str) -> Option<&'a str> {
    labels.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k.trim() == name).then(|| v.trim().trim_matches('"'))
    })
}

/// Adds the samples of one server's metrics text to `totals`.
fn add(totals: &mut Totals, text: &str) {
    for line in text.lines() {
        let Some((name, rest)) = line.split_once('{') else { continue };
        let Some((labels, value)) = rest.rsplit_once('}') else { continue };
        let Ok(value) = value.trim().parse::<f64>() else { continue };
        if label(labels, "route").is_some_and(|r| OWN_ROUTES.contains(&r)) {
            continue;
        }
        let Some(method) = label(labels, "method") else { continue };
        match name {
            "kith_http_time_seconds_total" => {
                let Some(part) = label(labels, "part") else { continue };
                *totals.seconds.entry((method.into(), part.into())).or_default() += value;
            }
            "kith_http_requests_total" => {
                *totals.requests.entry(method.into()).or_default() += value;
            }
            _ => {}
        }
    }
}

/// The totals over every server.
pub(super) async fn read(urls: &[String]) -> Result<Totals> {
    let http = reqwest::Client::builder().timeout(std::time::Duration::from_secs(10)).build()?;
    let mut totals = Totals::default();
    for url in urls {
        let text = http
            .get(format!("{url}/metrics"))
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .with_context(|| format!("reading {url}/metrics"))?
            .text()
            .await?;
        add(&mut totals, &text);
    }
    Ok(totals)
}

/// Milliseconds per request of `method` between two readings, by part (parts with none
/// left out).
pub(super) fn per_request(before: &Totals, after: &Totals, method: &str) -> BTreeMap<String, f64> {
    let n = |t: &Totals| t.requests.get(method).copied().unwrap_or(0.0);
    let requests = n(after) - n(before);
    let mut out = BTreeMap::new();
    if requests < 1.0 {
        return out;
    }
    for ((m, part), s) in &after.seconds {
        if m != method {
            continue;
        }
        let was = before.seconds.get(&(m.clone(), part.clone())).copied().unwrap_or(0.0);
        if s > &was {
            out.insert(part.clone(), (s - was) * 1000.0 / requests);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = r#"# HELP kith_http_time_seconds_total Time
# TYPE kith_http_time_seconds_total counter
kith_http_time_seconds_total{method="POST",part="store",route="/users/{uid}/follow"} 1
kith_http_time_seconds_total{method="POST",part="edge",route="/users/{uid}/follow"} 0.5
kith_http_time_seconds_total{method="GET",part="store",route="/stats"} 7
kith_http_requests_total{method="POST",route="/users/{uid}/follow",status="200"} 100
kith_http_requests_total{method="GET",route="/metrics",status="200"} 3
"#;

    const AFTER: &str = r#"kith_http_time_seconds_total{method="POST",part="store",route="/users/{uid}/follow"} 3
kith_http_time_seconds_total{method="POST",part="edge",route="/users/{uid}/follow"} 1.5
kith_http_time_seconds_total{method="POST",part="key-claim",route="/users/{uid}/follow"} 0.25
kith_http_time_seconds_total{method="DELETE",part="store",route="/users/{uid}/follow/{target}"} 9
kith_http_requests_total{method="POST",route="/users/{uid}/follow",status="200"} 550
kith_http_requests_total{method="POST",route="/users/{uid}/follow",status="409"} 50
kith_http_requests_total{method="GET",route="/metrics",status="200"} 4
"#;

    #[test]
    fn each_part_per_request_of_the_method_between_two_readings() {
        let (mut before, mut after) = (Totals::default(), Totals::default());
        add(&mut before, BEFORE);
        add(&mut after, AFTER);
        // 500 POSTs between (refusals are requests too): 2 s of store, 1 s of edges.
        let post = per_request(&before, &after, "POST");
        assert_eq!(post.len(), 3, "{post:?}");
        assert!((post["store"] - 4.0).abs() < 1e-9);
        assert!((post["edge"] - 2.0).abs() < 1e-9);
        assert!((post["key-claim"] - 0.5).abs() < 1e-9);
        // No DELETE counted as a request: nothing to divide by.
        assert!(per_request(&before, &after, "DELETE").is_empty());
        // The benchmark's own requests are not the load's.
        assert!(per_request(&before, &after, "GET").is_empty());
    }

    #[test]
    fn labels_are_read_in_any_order() {
        assert_eq!(label(r#"a="1",route="/x",b="2""#, "route"), Some("/x"));
        assert_eq!(label(r#"a="1""#, "route"), None);
    }
}
