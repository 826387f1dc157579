//! The checked-in header `include/shale.h` is what cbindgen generates from
//! this crate now; `SHALE_WRITE_HEADER=1 cargo test -p shale-capi` rewrites it.

use std::path::Path;

#[test]
fn the_checked_in_header_is_up_to_date() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("read cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/lib.rs"))
        .generate()
        .expect("generate the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let path = crate_dir.join("include/shale.h");
    if std::env::var_os("SHALE_WRITE_HEADER").is_some_and(|v| v == "1") {
        std::fs::write(&path, &generated).expect("write include/shale.h");
        return;
    }
    let checked_in = std::fs::read(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{} is out of date: run `SHALE_WRITE_HEADER=1 cargo test -p shale-capi --test header` and commit it",
        path.display()
    );
}
