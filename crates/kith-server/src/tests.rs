//! The whole application driven in-process through [`router`](crate::router), as a fuzz
//! target drives it: no port, requests through `tower::ServiceExt::oneshot`.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use kith_store::{BuildOptions, DataSpec, LayoutMeta, build};
use tower::ServiceExt;

use crate::{ServerConfig, router};

async fn send(app: &axum::Router, req: Request<Body>) -> (StatusCode, serde_json::Value) {
    let response = app.clone().oneshot(req).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null))
}

/// The whole application over a store of the Bondhu paper's example graph in `dir`.
async fn paper_app(dir: &std::path::Path) -> (axum::Router, Arc<kith_feed::Feed>) {
    let graph = kith_layout::paper_example();
    let layout = kith_layout::Layout::identity(graph.num_nodes());
    let options = BuildOptions { data: DataSpec::Fixed(4), ..BuildOptions::default() };
    let store = build(&dir.join("s"), &graph, &layout, LayoutMeta::default(), &options).unwrap();
    router(Arc::new(store), dir.join("journal"), &ServerConfig::default()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_serves_in_process_with_its_guards() {
    let dir = tempfile::tempdir().unwrap();
    let (app, feed) = paper_app(dir.path()).await;

    let get = Request::get("/users/1").header("host", "127.0.0.1:7070").body(Body::empty());
    let (status, user) = send(&app, get.unwrap()).await;
    assert_eq!(status, StatusCode::OK, "{user}");
    assert!(user["friends_total"].as_u64().is_some(), "{user}");

    let form = Request::post("/users/1/friends/2")
        .header("host", "127.0.0.1:7070")
        .header("origin", "https://evil.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from("a=b"));
    let (status, err) = send(&app, form.unwrap()).await;
    assert_eq!((status, err["error"].as_str()), (StatusCode::FORBIDDEN, Some("cross_site")));

    let rebound = Request::get("/users/1").header("host", "evil.example").body(Body::empty());
    let (status, _) = send(&app, rebound.unwrap()).await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST);
    feed.shutdown().await.unwrap();
}

/// The dashboard's JSON: bad parameters get 400s that name them, an unknown user a 404, and a
/// relayout is refused on a server without a token, whatever the request carries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboards_routes_refuse_bad_input_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let graph = kith_layout::paper_example();
    let (app, feed) = paper_app(dir.path()).await;
    let get =
        |uri: &str| Request::get(uri).header("host", "127.0.0.1:7070").body(Body::empty()).unwrap();
    for (uri, status, says) in [
        ("/ui/api/matrix?order=current&bins=0", StatusCode::BAD_REQUEST, "bins"),
        ("/ui/api/matrix?order=current&bins=100000", StatusCode::BAD_REQUEST, "bins"),
        ("/ui/api/matrix?order=sideways", StatusCode::BAD_REQUEST, "order"),
        ("/ui/api/ego/1?limit=0", StatusCode::BAD_REQUEST, "limit"),
        ("/ui/api/ego/1?limit=100000", StatusCode::BAD_REQUEST, "limit"),
        ("/ui/api/ego/123456789", StatusCode::NOT_FOUND, "123456789"),
        ("/ui/api/pages/123456789", StatusCode::NOT_FOUND, "123456789"),
        ("/ui/api/pages/notanumber", StatusCode::BAD_REQUEST, "notanumber"),
    ] {
        let (got, body) = send(&app, get(uri)).await;
        assert_eq!(got, status, "{uri}: {body}");
        assert!(body["message"].as_str().unwrap_or("").contains(says), "{uri}: {body}");
    }
    let (status, m) = send(&app, get("/ui/api/matrix?order=current&bins=3")).await;
    assert_eq!(status, StatusCode::OK, "{m}");
    let cells: u64 = m["cells"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum();
    assert_eq!(cells, 2 * graph.num_edges(), "{m}");

    let post = Request::post("/ui/api/relayout")
        .header("host", "127.0.0.1:7070")
        .header("authorization", "Bearer anything")
        .body(Body::empty())
        .unwrap();
    let (status, err) = send(&app, post).await;
    assert_eq!((status, err["error"].as_str()), (StatusCode::FORBIDDEN, Some("token_required")));
    let (status, job) = send(&app, get("/ui/api/relayout")).await;
    assert_eq!((status, job["state"].as_str()), (StatusCode::OK, Some("idle")), "{job}");

    // The page and its scripts are served with a policy that keeps them to this origin.
    let page = app.clone().oneshot(get("/ui/")).await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let csp = page.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(csp.contains("default-src 'self'"), "{csp}");
    let lib = app.clone().oneshot(get("/ui/echarts.min.js")).await.unwrap();
    let bytes = axum::body::to_bytes(lib.into_body(), 8 << 20).await.unwrap();
    assert!(bytes.len() > 500_000, "the charting library is embedded ({} bytes)", bytes.len());
    feed.shutdown().await.unwrap();
}
