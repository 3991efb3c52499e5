//! Forwarding of the ranks' stdout and stderr to the launcher's own, line by
//! line, so that lines of different ranks never mix, optionally prefixed by
//! `[rank] `.
//!
//! Complete lines are written at once. A partial line (a prompt without
//! newline) is held for [`PARTIAL_DELAY`] in case the rest follows, then
//! written; if another rank writes to the same stream while a line is left
//! open, the open line is ended first.

use std::io::Write;
use std::time::{Duration, Instant};

/// How long a line without its newline waits for its end.
pub const PARTIAL_DELAY: Duration = Duration::from_millis(100);

/// A partial line longer than this is written without waiting.
const PARTIAL_MAX: usize = 64 * 1024;

/// Which of the two standard streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout = 0,
    Stderr = 1,
}

/// Who wrote the text currently on an unfinished line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Rank(usize),
    Launcher,
}

struct Sink {
    writer: Box<dyn Write>,
    open_line: Option<Owner>,
    broken: bool,
}

#[derive(Default)]
struct Partial {
    data: Vec<u8>,
    since: Option<Instant>,
}

/// The launcher's output side.
pub struct Output {
    tag: bool,
    sinks: [Sink; 2],
    partial: Vec<[Partial; 2]>,
}

impl Output {
    /// Output for `ranks` ranks, written to `stdout` and `stderr`.
    pub fn new(ranks: usize, tag: bool, stdout: Box<dyn Write>, stderr: Box<dyn Write>) -> Self {
        let sink = |writer| Sink { writer, open_line: None, broken: false };
        Output { tag, sinks: [sink(stdout), sink(stderr)], partial: (0..ranks).map(|_| Default::default()).collect() }
    }

    /// Text a rank wrote to `stream`.
    pub fn feed(&mut self, rank: usize, stream: Stream, data: &[u8], now: Instant) {
        let Some(slot) = self.partial.get_mut(rank) else { return };
        let p = &mut slot[stream as usize];
        p.data.extend_from_slice(data);
        // Up to the last newline; everything if the unfinished line is huge.
        let mut cut = p.data.iter().rposition(|&b| b == b'\n').map_or(0, |nl| nl + 1);
        if p.data.len() - cut > PARTIAL_MAX {
            cut = p.data.len();
        }
        if cut > 0 {
            let ready: Vec<u8> = p.data.drain(..cut).collect();
            p.since = None;
            self.emit(Owner::Rank(rank), stream, &ready);
        }
        let p = &mut self.partial[rank][stream as usize];
        if !p.data.is_empty() && p.since.is_none() {
            p.since = Some(now);
        }
    }

    /// Writes whatever rank `rank` left unfinished (it ended or closed).
    pub fn flush_rank(&mut self, rank: usize, stream: Stream) {
        let Some(slot) = self.partial.get_mut(rank) else { return };
        let p = &mut slot[stream as usize];
        if p.data.is_empty() {
            return;
        }
        let data = std::mem::take(&mut p.data);
        p.since = None;
        self.emit(Owner::Rank(rank), stream, &data);
    }

    /// The streams whose partial line waited long enough.
    pub fn due(&self, now: Instant) -> Vec<(usize, Stream)> {
        let mut out = Vec::new();
        for (rank, slot) in self.partial.iter().enumerate() {
            for stream in [Stream::Stdout, Stream::Stderr] {
                if slot[stream as usize].since.is_some_and(|t| now.duration_since(t) >= PARTIAL_DELAY) {
                    out.push((rank, stream));
                }
            }
        }
        out
    }

    /// Writes the partial lines that waited long enough.
    pub fn flush_due(&mut self, now: Instant) {
        for (rank, stream) in self.due(now) {
            self.flush_rank(rank, stream);
        }
    }

    /// When the next partial line falls due.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.partial.iter().flat_map(|s| s.iter()).filter_map(|p| p.since).min().map(|t| t + PARTIAL_DELAY)
    }

    /// A message of the launcher itself, on stderr (a newline is added).
    pub fn message(&mut self, text: &str) {
        let mut line = text.as_bytes().to_vec();
        line.push(b'\n');
        self.emit(Owner::Launcher, Stream::Stderr, &line);
    }

    fn emit(&mut self, owner: Owner, stream: Stream, data: &[u8]) {
        let prefix = match owner {
            Owner::Rank(r) if self.tag => format!("[{r}] "),
            _ => String::new(),
        };
        let sink = &mut self.sinks[stream as usize];
        let mut out = Vec::with_capacity(data.len() + prefix.len() + 1);
        let mut at_start = true;
        if sink.open_line == Some(owner) {
            at_start = false;
        } else if sink.open_line.is_some() {
            out.push(b'\n');
        }
        for piece in data.split_inclusive(|&b| b == b'\n') {
            if at_start {
                out.extend_from_slice(prefix.as_bytes());
            }
            out.extend_from_slice(piece);
            at_start = piece.ends_with(b"\n");
        }
        sink.open_line = if at_start { None } else { Some(owner) };
        if sink.broken {
            return;
        }
        if sink.writer.write_all(&out).and_then(|()| sink.writer.flush()).is_err() {
            // The reader went away (closed pipe); keep draining the ranks.
            sink.broken = true;
        }
    }

    /// Whether writing to `stream` failed (its reader went away).
    pub fn is_broken(&self, stream: Stream) -> bool {
        self.sinks[stream as usize].broken
    }

    /// Ends an unfinished line on both streams (at the end of the job).
    pub fn finish(&mut self) {
        for rank in 0..self.partial.len() {
            self.flush_rank(rank, Stream::Stdout);
            self.flush_rank(rank, Stream::Stderr);
        }
        for sink in &mut self.sinks {
            if sink.open_line.take().is_some() && !sink.broken {
                let _ = sink.writer.write_all(b"\n").and_then(|()| sink.writer.flush());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    fn make(tag: bool) -> (Output, Shared, Shared) {
        let (o, e) = (Shared::default(), Shared::default());
        (Output::new(3, tag, Box::new(o.clone()), Box::new(e.clone())), o, e)
    }

    #[test]
    fn tagged_lines_never_mix() {
        let (mut out, o, e) = make(true);
        let t = Instant::now();
        out.feed(0, Stream::Stdout, b"hel", t);
        out.feed(1, Stream::Stdout, b"one\ntw", t);
        out.feed(0, Stream::Stdout, b"lo\n", t);
        out.feed(1, Stream::Stdout, b"o\n", t);
        out.feed(2, Stream::Stderr, b"err\n", t);
        assert_eq!(o.text(), "[1] one\n[0] hello\n[1] two\n");
        assert_eq!(e.text(), "[2] err\n");
    }

    #[test]
    fn partial_lines_flush_after_delay() {
        let (mut out, o, _e) = make(true);
        let t = Instant::now();
        out.feed(0, Stream::Stdout, b"prompt: ", t);
        assert_eq!(o.text(), "");
        assert_eq!(out.next_deadline(), Some(t + PARTIAL_DELAY));
        out.flush_due(t + PARTIAL_DELAY);
        assert_eq!(o.text(), "[0] prompt: ");
        out.feed(1, Stream::Stdout, b"x\n", t);
        out.feed(0, Stream::Stdout, b"answer\n", t);
        assert_eq!(o.text(), "[0] prompt: \n[1] x\n[0] answer\n");
    }

    #[test]
    fn untagged_and_launcher_messages() {
        let (mut out, o, e) = make(false);
        let t = Instant::now();
        out.feed(0, Stream::Stdout, b"a\nb\n", t);
        out.feed(1, Stream::Stderr, b"half", t);
        out.flush_due(t + PARTIAL_DELAY);
        out.message("mpirun: note");
        out.finish();
        assert_eq!(o.text(), "a\nb\n");
        assert_eq!(e.text(), "half\nmpirun: note\n");
    }

    #[test]
    fn big_chunks_keep_lines_whole() {
        let (mut out, o, _e) = make(true);
        let t = Instant::now();
        let line = [b'a'; 99].iter().copied().chain([b'\n']).collect::<Vec<u8>>();
        let data: Vec<u8> = line.iter().copied().cycle().take(100 * 1000 + 50).collect();
        for chunk in data.chunks(PARTIAL_MAX) {
            out.feed(0, Stream::Stdout, chunk, t);
            out.feed(1, Stream::Stdout, b"x\n", t);
        }
        assert_eq!(o.text().lines().filter(|l| l.len() != 103 && *l != "[1] x").count(), 0);
        // A single line longer than the limit goes out in pieces.
        out.feed(2, Stream::Stdout, &vec![b'b'; PARTIAL_MAX + 10], t);
        assert!(o.text().ends_with("bbbb"));
    }
}
