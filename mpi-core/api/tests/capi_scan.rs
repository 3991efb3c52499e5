//! The scanner mpi-core's build script uses to find the procedures
//! implemented in `src/capi/` (`mpi-core/build/capi_scan.rs`): what it
//! finds must not depend on how the source is wrapped.

#[path = "../../build/capi_scan.rs"]
mod capi_scan;

use std::path::Path;

use capi_scan::{scan_dir, scan_source, Implemented};

fn scan(text: &str) -> Result<Implemented, String> {
    let mut found = Implemented::default();
    scan_source(text, &mut found).map(|()| found)
}

fn names(found: &Implemented) -> Vec<&str> {
    found.names.iter().map(String::as_str).collect()
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_string(), b.to_string())
}

#[test]
fn plain_functions_and_inline_modules() {
    let found = scan(
        r#"
        pub unsafe fn MPI_Send(buf: *const c_void, count: c_int) -> c_int { 0 }
        pub unsafe fn
            MPI_Recv(
                buf: *mut c_void,
            ) -> c_int {
            0
        }
        mod inner {
            pub mod deeper {
                pub unsafe fn MPI_Barrier(comm: MPI_Comm) -> c_int { 0 }
            }
        }
        // Not the exported form: private, safe, extern, const, or not MPI_.
        unsafe fn MPI_Private() -> c_int { 0 }
        pub fn MPI_Safe() -> c_int { 0 }
        pub(crate) unsafe fn MPI_Crate() -> c_int { 0 }
        pub unsafe extern "C" fn MPI_Extern() -> c_int { 0 }
        pub const unsafe fn MPI_Const() -> c_int { 0 }
        pub unsafe fn helper() -> c_int { 0 }
        const DOC: &str = "pub unsafe fn MPI_InAString(";
        "#,
    )
    .unwrap();
    assert_eq!(names(&found), ["MPI_Barrier", "MPI_Recv", "MPI_Send"]);
    assert!(found.twins.is_empty());
}

#[test]
fn a_twins_item_on_one_line_or_rewrapped_is_found() {
    let one_line = r#"
        twins! {
            pub unsafe fn MPI_Win_create | MPI_Win_create_c(base: *mut c_void, size: MPI_Aint, disp_unit: Disp, info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) -> c_int {
                crate::capi::ret(comm, NAME, create(base, size, disp_unit as MPI_Aint, info, win))
            }
        }
    "#;
    let rewrapped = r#"
        twins! {
            /// Documented.
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn
                MPI_Win_create
                |
                MPI_Win_create_c(
                    base: *mut c_void,
                    size: MPI_Aint,
                    disp_unit: Disp,
                    info: MPI_Info,
                    comm: MPI_Comm,
                    win: *mut MPI_Win,
                ) -> c_int
            {
                crate::capi::ret(comm, NAME, create(base, size, disp_unit as MPI_Aint, info, win))
            }

            pub unsafe fn MPI_Send | MPI_Send_c(
                buf: *const c_void, count: Count,
            ) -> c_int { 0 }
        }
        mod nested {
            crate::capi::p2p::twins! {
                pub unsafe fn MPI_Get_count | MPI_Get_count_c(status: *const MPI_Status, datatype: MPI_Datatype, count: *mut Count) -> c_int { 0 }
            }
        }
    "#;
    let found = scan(one_line).unwrap();
    assert_eq!(names(&found), ["MPI_Win_create", "MPI_Win_create_c"]);
    assert_eq!(found.twins, [pair("MPI_Win_create", "MPI_Win_create_c")]);
    let found = scan(rewrapped).unwrap();
    assert_eq!(
        names(&found),
        ["MPI_Get_count", "MPI_Get_count_c", "MPI_Send", "MPI_Send_c", "MPI_Win_create", "MPI_Win_create_c"]
    );
    assert_eq!(
        found.twins,
        [
            pair("MPI_Win_create", "MPI_Win_create_c"),
            pair("MPI_Send", "MPI_Send_c"),
            pair("MPI_Get_count", "MPI_Get_count_c")
        ]
    );
}

#[test]
fn malformed_twins_and_sources_fail() {
    let not_mpi = "twins! { pub unsafe fn MPI_Send | Send_c(buf: *const c_void) -> c_int { 0 } }";
    assert!(scan(not_mpi).unwrap_err().contains("not an MPI_ name"));
    let no_pair = "twins! { pub unsafe fn MPI_Send(buf: *const c_void) -> c_int { 0 } }";
    assert!(scan(no_pair).unwrap_err().contains("twins!"));
    assert!(scan("pub unsafe fn MPI_Send(").is_err());
}

#[test]
fn the_library_sources() {
    let capi = Path::new(env!("CARGO_MANIFEST_DIR")).join("../src/capi");
    let found = scan_dir(&capi).unwrap();
    for name in ["MPI_Init", "MPI_Send", "MPI_Win_create", "MPI_Win_create_c"] {
        assert!(found.names.contains(name), "{name} not found");
    }
    assert!(found.twins.contains(&pair("MPI_Win_create", "MPI_Win_create_c")));
    // Every name found is a procedure of the table, and every twin pair is
    // a procedure and its `_c` form.
    let procs = mpi_api::table::procedures();
    for name in &found.names {
        assert!(procs.iter().any(|p| p.name == name), "{name} is not in the table");
    }
    for (int, large) in &found.twins {
        assert_eq!(*large, format!("{int}_c"));
    }
}

#[test]
fn subdirectories_are_scanned() {
    let dir = std::env::temp_dir().join(format!("capi-scan-test-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("chapter")).unwrap();
    std::fs::write(dir.join("a.rs"), "pub unsafe fn MPI_Send() -> c_int { 0 }").unwrap();
    std::fs::write(dir.join("chapter/b.rs"), "pub unsafe fn MPI_Recv() -> c_int { 0 }").unwrap();
    std::fs::write(dir.join("notes.txt"), "pub unsafe fn MPI_Bcast() -> c_int { 0 }").unwrap();
    let found = scan_dir(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(names(&found.unwrap()), ["MPI_Recv", "MPI_Send"]);
}
