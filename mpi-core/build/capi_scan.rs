//! Finds the MPI procedures implemented in the C-boundary sources
//! (`mpi-core/src/capi/**.rs`) by parsing them, so the layout of the source
//! (an item re-wrapped over several lines) never changes what is exported.
//!
//! Shared by mpi-core's build script and, through `#[path]`, by a test of
//! `mpi-api` (a crate that can have `syn` as a dev-dependency).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use syn::parse::ParseStream;
use syn::punctuated::Punctuated;
use syn::{Attribute, Block, FnArg, Ident, Item, Token, Type, Visibility};

/// The implementations found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Implemented {
    /// Every procedure name `MPI_X` with an implementation.
    pub names: BTreeSet<String>,
    /// The pairs (`MPI_X`, `MPI_X_c`) defined by one `twins!` item.
    pub twins: Vec<(String, String)>,
}

/// Scans every `.rs` file under `dir`, in subdirectories too, in path order.
pub fn scan_dir(dir: &Path) -> Result<Implemented, String> {
    let mut files = Vec::new();
    collect_sources(dir, &mut files).map_err(|e| format!("{}: {e}", dir.display()))?;
    files.sort();
    let mut found = Implemented::default();
    for file in &files {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        scan_source(&text, &mut found).map_err(|e| format!("{}: {e}", file.display()))?;
    }
    Ok(found)
}

fn collect_sources(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_sources(&path, files)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    Ok(())
}

/// Adds the implementations in one source file to `found`: the functions
/// `pub unsafe fn MPI_X(...)` or `MPIX_X(...)` (at the top level or in inline modules) and
/// the items `pub unsafe fn MPI_X | MPI_X_c(...)` of `twins!` blocks.
pub fn scan_source(text: &str, found: &mut Implemented) -> Result<(), String> {
    let file = syn::parse_file(text).map_err(|e| e.to_string())?;
    scan_items(&file.items, found)
}

fn scan_items(items: &[Item], found: &mut Implemented) -> Result<(), String> {
    for item in items {
        match item {
            Item::Fn(f) => {
                let sig = &f.sig;
                let exported_form = matches!(f.vis, Visibility::Public(_))
                    && sig.unsafety.is_some()
                    && sig.abi.is_none()
                    && sig.constness.is_none()
                    && sig.asyncness.is_none();
                let name = sig.ident.to_string();
                if exported_form && (name.starts_with("MPI_") || name.starts_with("MPIX_")) {
                    found.names.insert(name);
                }
            }
            Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    scan_items(items, found)?;
                }
            }
            Item::Macro(m) if m.mac.path.segments.last().is_some_and(|s| s.ident == "twins") => {
                let pairs = m.mac.parse_body_with(parse_twins).map_err(|e| format!("in a twins! block: {e}"))?;
                for (int, large) in pairs {
                    if !int.starts_with("MPI_") {
                        continue;
                    }
                    if !large.starts_with("MPI_") {
                        return Err(format!("the second name of the twins! item {int} is not an MPI_ name: {large}"));
                    }
                    found.names.insert(int.clone());
                    found.names.insert(large.clone());
                    found.twins.push((int, large));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The body of `twins!`: items `#[attr]* pub unsafe fn A | B(params) -> T { body }`
/// (the macro's own pattern), as the pairs of names.
fn parse_twins(input: ParseStream) -> syn::Result<Vec<(String, String)>> {
    let mut pairs = Vec::new();
    while !input.is_empty() {
        input.call(Attribute::parse_outer)?;
        input.parse::<Token![pub]>()?;
        input.parse::<Token![unsafe]>()?;
        input.parse::<Token![fn]>()?;
        let int: Ident = input.parse()?;
        input.parse::<Token![|]>()?;
        let large: Ident = input.parse()?;
        let params;
        syn::parenthesized!(params in input);
        Punctuated::<FnArg, Token![,]>::parse_terminated(&params)?;
        input.parse::<Token![->]>()?;
        input.parse::<Type>()?;
        input.parse::<Block>()?;
        pairs.push((int.to_string(), large.to_string()));
    }
    Ok(pairs)
}
