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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_serves_in_process_with_its_guards() {
    let dir = tempfile::tempdir().unwrap();
    let graph = kith_layout::paper_example();
    let layout = kith_layout::Layout::identity(graph.num_nodes());
    let options = BuildOptions { data: DataSpec::Fixed(4), ..BuildOptions::default() };
    let store =
        build(&dir.path().join("s"), &graph, &layout, LayoutMeta::default(), &options).unwrap();
    let (app, feed) = router(Arc::new(store), dir.path().join("journal"), &ServerConfig::default())
        .await
        .unwrap();

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
