//! `mpitrace gui DIR`: a desktop timeline analyzer for MPI traces.
//!
//! Layers, each testable without a window:
//! - [`data`]: the trace (level of detail, then analyses) loaded on a
//!   background thread, with progress and errors;
//! - [`view`], [`lanes`], [`filter`]: the time range, the rows, filters;
//! - [`timeline`]: one frame's geometry as batched meshes, a pure function
//!   of the trace and the view (benchmarked);
//! - [`stats`]: the side views' numbers for a time range;
//! - [`app`]: the state and everything the viewer does;
//! - [`ui`]: drawing with egui and turning input into [`app`] calls.
//!
//! [`run`] opens the window with eframe.

pub mod app;
pub mod data;
pub mod filter;
pub mod lanes;
pub mod stats;
pub mod timeline;
pub mod ui;
pub mod view;

use std::path::Path;

pub use app::GuiApp;

/// Errors of the viewer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("window: {0}")]
    Window(String),
    #[error("{0}: no such directory")]
    NoTrace(std::path::PathBuf),
}

/// A trace directory that is not there is an error before any window opens.
fn existing(dir: &Path) -> Result<(), Error> {
    if dir.is_dir() {
        Ok(())
    } else {
        Err(Error::NoTrace(dir.to_path_buf()))
    }
}

struct Native(GuiApp);

impl eframe::App for Native {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.0.show(ui);
    }
}

/// Opens a window on the trace in `dir` (loaded in the background) and
/// returns when it is closed.
pub fn run(dir: &Path) -> Result<(), Error> {
    existing(dir)?;
    run_app(GuiApp::open(dir), format!("mpitrace gui — {}", dir.display()))
}

/// Opens a window on the traces in `a` and `b`, one above the other with
/// coupled zoom, pan and selection, and returns when it is closed.
pub fn run_compare(a: &Path, b: &Path) -> Result<(), Error> {
    existing(a)?;
    existing(b)?;
    run_app(GuiApp::open_compare(a, b), format!("mpitrace gui — {} vs {}", a.display(), b.display()))
}

fn run_app(app: GuiApp, title: String) -> Result<(), Error> {
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default().with_title(title).with_inner_size([1400.0, 850.0]),
        ..Default::default()
    };
    eframe::run_native("mpitrace gui", options, Box::new(|_cc| Ok(Box::new(Native(app)))))
        .map_err(|e| Error::Window(e.to_string()))
}
