//! Text edge lists in every format the loader reads (SNAP, KONECT, MatrixMarket, CSV, gzip,
//! zip, SNAP ego archives), with the format sniffed or given: any input gets a graph that
//! holds the graph invariants, or an error; never a panic or an abort.

#![no_main]

use kith_graph::{Format, LoadConfig};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Some((&select, body)) = data.split_first() else { return };
    let (name, format) = match select & 0x0f {
        0 => ("g.txt", None),
        1 => ("g.txt", Some(Format::Snap)),
        2 => ("out.g", Some(Format::Konect)),
        3 => ("g.mtx", Some(Format::Mtx)),
        4 => ("g.csv", Some(Format::Csv)),
        5 => ("g.txt.gz", None),
        6 => ("g.zip", None),
        7 => ("ego.tar.gz", Some(Format::SnapEgo)),
        _ => ("g.edges", None),
    };
    let path = common::write(name, body);
    let config = LoadConfig { format, directed: select & 0x80 != 0, ..LoadConfig::default() };
    if let Ok(g) = kith_graph::load(&path, &config) {
        common::check_graph(&g);
    }
});
