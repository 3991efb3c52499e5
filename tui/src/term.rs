//! The real terminal: raw mode, alternate screen, mouse, the event loop,
//! and restoring the terminal whatever happens.

use std::io::{stdout, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event, KeyEventKind};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::crossterm::cursor::Show;
use ratatui::Terminal;

use crate::app::App;
use crate::Error;

/// Set by the signal handler; the event loop then ends.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALLED.store(true, Ordering::SeqCst);
}

/// Puts the terminal back as it was (idempotent).
fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(stdout(), DisableMouseCapture, LeaveAlternateScreen, Show);
    let _ = stdout().flush();
}

/// Restores the terminal when dropped (normal exit and unwinding).
struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Runs the viewer on the trace in `dir` until the user quits.
pub fn run(dir: &Path) -> Result<(), Error> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::signal(s, on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t);
        }
    }
    enable_raw_mode()?;
    let _guard = Guard;
    execute!(stdout(), EnterAlternateScreen, EnableMouseCapture)?;
    let mut terminal = Terminal::new(CrosstermBackend::new(stdout()))?;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| event_loop(&mut terminal, dir)));
    let _ = terminal.show_cursor();
    match result {
        Ok(r) => r,
        Err(p) => Err(Error::Internal(
            p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_default(),
        )),
    }
}

fn event_loop(terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>, dir: &Path) -> Result<(), Error> {
    let mut app = App::open(dir);
    let mut dirty = true;
    while !app.quit && !SIGNALLED.load(Ordering::SeqCst) {
        dirty |= app.poll();
        if dirty {
            let size = terminal.size()?;
            app.size = (size.width, size.height);
            terminal.draw(|f| crate::ui::draw(f, &app))?;
            dirty = false;
        }
        let timeout = if app.loading() { Duration::from_millis(100) } else { Duration::from_millis(250) };
        if event::poll(timeout)? {
            match event::read()? {
                Event::Key(k) if k.kind != KeyEventKind::Release => app.on_key(k),
                Event::Mouse(m) => app.on_mouse(m),
                Event::Resize(w, h) => app.size = (w, h),
                _ => {}
            }
            dirty = true;
        } else if app.loading() {
            dirty = true;
        }
    }
    Ok(())
}
