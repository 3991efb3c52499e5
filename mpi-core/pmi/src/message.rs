//! One PMI message (a command and ordered key/value pairs) in its three wire
//! forms, and the cutting of a server's input into messages.

use std::fmt;

/// Width of a PMI-2 message's length field.
pub const V2_LENGTH_WIDTH: usize = 6;

/// A message longer than this without its end is a protocol error (the
/// server would otherwise buffer a broken client's bytes without bound).
pub const MAX_MESSAGE: usize = 1 << 20;

/// The line that ends each segment of a multi-line (`mcmd=`) command.
const MCMD_END: &[u8] = b"endcmd\n";

/// Why bytes are not a PMI message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The text does not start with `cmd=<name>` (PMI-1), `mcmd=<name>`
    /// (multi-line) or hold a `cmd=<name>` field (PMI-2).
    NoCommand(String),
    /// A multi-line command without its `endcmd` line.
    NoEnd(String),
    /// The 6 characters before a PMI-2 message are not a length.
    BadLength(String),
    /// A PMI-2 message longer than [`MAX_MESSAGE`].
    TooLong(usize),
    /// No end of message within [`MAX_MESSAGE`] bytes.
    Unterminated,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::NoCommand(text) => write!(f, "no command in PMI message {text:?}"),
            DecodeError::NoEnd(text) => write!(f, "multi-line PMI command without endcmd: {text:?}"),
            DecodeError::BadLength(text) => write!(f, "bad PMI-2 length field {text:?}"),
            DecodeError::TooLong(len) => write!(f, "PMI-2 message of {len} bytes is too long"),
            DecodeError::Unterminated => write!(f, "no end of message after {MAX_MESSAGE} bytes"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Which wire format a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// PMI-1 lines (and `mcmd=` segments).
    V1,
    /// PMI-2 length-prefixed messages.
    V2,
}

impl Wire {
    /// `pmi_version` and `pmi_subversion` of the `init` handshake.
    pub fn version(self) -> (&'static str, &'static str) {
        match self {
            Wire::V1 => ("1", "1"),
            Wire::V2 => ("2", "0"),
        }
    }
}

/// A PMI message: the command and its arguments in wire order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Message {
    pub cmd: String,
    pub args: Vec<(String, String)>,
}

/// The `init` line a client starts with, asking for `wire` (always sent as
/// a PMI-1 line).
pub fn init_request(wire: Wire) -> Message {
    let (version, subversion) = wire.version();
    Message::new("init").with("pmi_version", version).with("pmi_subversion", subversion)
}

/// The server's answer to `init`: the version it will speak and whether it
/// accepts (`rc=0`) or refuses (`rc=-1`).
pub fn init_response(wire: Wire, accepted: bool) -> Message {
    let (version, subversion) = wire.version();
    Message::new("response_to_init")
        .with("pmi_version", version)
        .with("pmi_subversion", subversion)
        .with("rc", if accepted { "0" } else { "-1" })
}

/// The command of the PMI-2 answer to `cmd`.
pub fn v2_response_name(cmd: &str) -> String {
    format!("{cmd}-response")
}

impl Message {
    /// A message without arguments.
    pub fn new(cmd: impl Into<String>) -> Self {
        Message { cmd: cmd.into(), args: Vec::new() }
    }

    /// The message with one more argument.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.push(key, value);
        self
    }

    /// Appends an argument.
    pub fn push(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.args.push((key.into(), value.into()));
    }

    /// The value of the first argument named `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.args.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Takes out the value of the first argument named `key`.
    pub fn take(&mut self, key: &str) -> Option<String> {
        let at = self.args.iter().position(|(k, _)| k == key)?;
        Some(self.args.remove(at).1)
    }

    /// Whether the message carries `rc=0`.
    pub fn rc_is_zero(&self) -> bool {
        self.get("rc") == Some("0")
    }

    /// The PMI-1 line `cmd=<cmd> k=v ...\n`. Values go out as they are (a
    /// client that needs blanks in a value escapes them itself).
    pub fn to_v1_line(&self) -> String {
        let mut line = format!("cmd={}", self.cmd);
        for (key, value) in &self.args {
            line.push(' ');
            line.push_str(key);
            line.push('=');
            line.push_str(value);
        }
        line.push('\n');
        line
    }

    /// Parses a PMI-1 line (with or without its newline). The first word
    /// must be `cmd=<name>`; a word without `=` is a key with an empty value.
    pub fn parse_v1_line(line: &str) -> Result<Message, DecodeError> {
        let mut words = Vec::new();
        let mut word = String::new();
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    word.push(c);
                    if let Some(escaped) = chars.next() {
                        word.push(escaped);
                    }
                }
                ' ' | '\t' | '\r' | '\n' => {
                    if !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                }
                _ => word.push(c),
            }
        }
        if !word.is_empty() {
            words.push(word);
        }
        let mut words = words.into_iter().map(|w| match w.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (w, String::new()),
        });
        match words.next() {
            Some((key, cmd)) if key == "cmd" && !cmd.is_empty() => Ok(Message { cmd, args: words.collect() }),
            _ => Err(DecodeError::NoCommand(line.to_string())),
        }
    }

    /// The multi-line form: `mcmd=<cmd>\n`, a `k=v\n` line per argument,
    /// `endcmd\n`. Neither keys nor values may contain a newline.
    pub fn to_mcmd(&self) -> String {
        let mut text = format!("mcmd={}\n", self.cmd);
        for (key, value) in &self.args {
            text.push_str(key);
            text.push('=');
            text.push_str(value);
            text.push('\n');
        }
        text.push_str("endcmd\n");
        text
    }

    /// Parses a multi-line command up to and including its `endcmd` line
    /// (lines may end in `\r\n`; what follows `endcmd` is ignored).
    pub fn parse_mcmd(block: &str) -> Result<Message, DecodeError> {
        let mut lines = block.split('\n').map(|l| l.trim_end_matches('\r'));
        let cmd = match lines.next().and_then(|l| l.strip_prefix("mcmd=")) {
            Some(cmd) if !cmd.is_empty() => cmd.to_string(),
            _ => return Err(DecodeError::NoCommand(block.to_string())),
        };
        let mut msg = Message::new(cmd);
        for line in lines {
            if line == "endcmd" {
                return Ok(msg);
            }
            let (key, value) = line.split_once('=').unwrap_or((line, ""));
            msg.push(key, value);
        }
        Err(DecodeError::NoEnd(block.to_string()))
    }

    /// The PMI-2 message body `cmd=<cmd>;k=v;...;`, `;` in values doubled.
    pub fn to_v2_body(&self) -> String {
        let mut body = format!("cmd={};", self.cmd);
        for (key, value) in &self.args {
            body.push_str(key);
            body.push('=');
            body.push_str(&value.replace(';', ";;"));
            body.push(';');
        }
        body
    }

    /// The whole PMI-2 message: the body's length, left-justified in
    /// [`V2_LENGTH_WIDTH`] characters, then the body.
    pub fn to_v2(&self) -> String {
        let body = self.to_v2_body();
        format!("{:<width$}{body}", body.len(), width = V2_LENGTH_WIDTH)
    }

    /// Parses a PMI-2 message body. `;;` is a `;` inside a value; empty
    /// fields are skipped; a field without `=` is a key with an empty value.
    /// The first `cmd` field names the command, later ones are arguments.
    pub fn parse_v2_body(body: &str) -> Result<Message, DecodeError> {
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut chars = body.chars().peekable();
        while let Some(c) = chars.next() {
            if c != ';' {
                field.push(c);
            } else if chars.peek() == Some(&';') {
                chars.next();
                field.push(';');
            } else {
                fields.push(std::mem::take(&mut field));
            }
        }
        fields.push(field);
        let mut msg = Message::default();
        for field in fields.into_iter().filter(|f| !f.is_empty()) {
            let (key, value) = field.split_once('=').unwrap_or((&field, ""));
            if key == "cmd" && msg.cmd.is_empty() {
                msg.cmd = value.to_string();
            } else {
                msg.push(key, value);
            }
        }
        if msg.cmd.is_empty() {
            return Err(DecodeError::NoCommand(body.to_string()));
        }
        Ok(msg)
    }
}

/// The body length of a PMI-2 message from its length field (blanks around
/// the number are allowed).
pub fn parse_v2_length(field: &[u8]) -> Result<usize, DecodeError> {
    let text = String::from_utf8_lossy(field);
    text.trim().parse().map_err(|_| DecodeError::BadLength(text.into_owned()))
}

/// Removes the backslash escapes of a PMI-1 value (for values a server
/// itself interprets, such as an abort message).
pub fn unescape_v1(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    out
}

/// A complete message cut off a server's input, not yet parsed (the server
/// traces the text before it parses it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A PMI-1 line, without its newline.
    V1(String),
    /// A multi-line `mcmd=...` segment, up to and including `endcmd\n`.
    Mcmd(String),
    /// A PMI-2 message body, without its length field.
    V2(String),
}

/// Takes the next complete message off the front of `input`, read from a
/// connection that speaks `wire`; `Ok(None)` while it is incomplete.
/// Invalid UTF-8 is replaced, not refused (the parsers then find no command).
pub fn take_frame(input: &mut Vec<u8>, wire: Wire) -> Result<Option<Frame>, DecodeError> {
    let unterminated = |input: &Vec<u8>| {
        if input.len() > MAX_MESSAGE {
            Err(DecodeError::Unterminated)
        } else {
            Ok(None)
        }
    };
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    match wire {
        Wire::V1 if input.starts_with(b"mcmd=") => {
            let Some(end) = input.windows(MCMD_END.len()).position(|w| w == MCMD_END) else {
                return unterminated(input);
            };
            let block: Vec<u8> = input.drain(..end + MCMD_END.len()).collect();
            Ok(Some(Frame::Mcmd(text(&block))))
        }
        Wire::V1 => {
            let Some(newline) = input.iter().position(|&b| b == b'\n') else {
                return unterminated(input);
            };
            let line: Vec<u8> = input.drain(..=newline).collect();
            Ok(Some(Frame::V1(text(&line[..newline]))))
        }
        Wire::V2 => {
            if input.len() < V2_LENGTH_WIDTH {
                return Ok(None);
            }
            let len = parse_v2_length(&input[..V2_LENGTH_WIDTH])?;
            if len > MAX_MESSAGE {
                return Err(DecodeError::TooLong(len));
            }
            if input.len() < V2_LENGTH_WIDTH + len {
                return Ok(None);
            }
            let message: Vec<u8> = input.drain(..V2_LENGTH_WIDTH + len).collect();
            Ok(Some(Frame::V2(text(&message[V2_LENGTH_WIDTH..]))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(cmd: &str, args: &[(&str, &str)]) -> Message {
        args.iter().fold(Message::new(cmd), |m, (k, v)| m.with(*k, *v))
    }

    #[test]
    fn v1_round_trip() {
        let m = msg("put", &[("kvsname", "kvs_1"), ("key", "a"), ("value", "x=1")]);
        let line = m.to_v1_line();
        assert_eq!(line, "cmd=put kvsname=kvs_1 key=a value=x=1\n");
        assert_eq!(Message::parse_v1_line(&line), Ok(m));
        let bare = Message::new("barrier_in");
        assert_eq!(bare.to_v1_line(), "cmd=barrier_in\n");
        assert_eq!(Message::parse_v1_line("cmd=barrier_in\n"), Ok(bare));
    }

    #[test]
    fn v1_edge_cases() {
        // Empty values, `=` inside values, words without `=`, extra blanks.
        let m = Message::parse_v1_line("cmd=get_result  rc=0\tmsg= value=a=b=c flag\r\n").unwrap();
        assert_eq!(m, msg("get_result", &[("rc", "0"), ("msg", ""), ("value", "a=b=c"), ("flag", "")]));
        assert_eq!(m.get("msg"), Some(""));
        assert!(m.rc_is_zero());
        // Escaped blanks stay in the value, escapes included.
        let m = Message::parse_v1_line("cmd=abort exitcode=7 message=bad\\ thing\\\\\n").unwrap();
        assert_eq!(m.get("message"), Some("bad\\ thing\\\\"));
        assert_eq!(unescape_v1(m.get("message").unwrap()), "bad thing\\");
        // A trailing lone backslash neither panics nor is lost.
        assert_eq!(Message::parse_v1_line("cmd=x v=a\\").unwrap().get("v"), Some("a\\"));
        assert_eq!(unescape_v1("a\\"), "a");
        // An empty value round-trips.
        let m = msg("put", &[("key", "k"), ("value", "")]);
        assert_eq!(Message::parse_v1_line(&m.to_v1_line()), Ok(m));
    }

    #[test]
    fn v1_garbage_is_an_error() {
        for bad in ["", "\n", "hello\n", "cmd=\n", "key=v cmd=x\n", "   \n", "=\n", "cmd\n"] {
            assert!(matches!(Message::parse_v1_line(bad), Err(DecodeError::NoCommand(_))), "{bad:?}");
        }
    }

    #[test]
    fn mcmd_round_trip() {
        let m = msg("spawn", &[("nprocs", "2"), ("execname", "./a b"), ("arg1", "x=y"), ("info_num", "0")]);
        let text = m.to_mcmd();
        assert_eq!(text, "mcmd=spawn\nnprocs=2\nexecname=./a b\narg1=x=y\ninfo_num=0\nendcmd\n");
        assert_eq!(Message::parse_mcmd(&text), Ok(m));
        assert_eq!(
            Message::parse_mcmd("mcmd=spawn\r\nnprocs=1\r\nempty=\r\nbare\r\nendcmd\r\n"),
            Ok(msg("spawn", &[("nprocs", "1"), ("empty", ""), ("bare", "")]))
        );
    }

    #[test]
    fn mcmd_garbage_is_an_error() {
        assert!(matches!(Message::parse_mcmd("mcmd=spawn\nnprocs=1\n"), Err(DecodeError::NoEnd(_))));
        assert!(matches!(Message::parse_mcmd("mcmd=spawn"), Err(DecodeError::NoEnd(_))));
        for bad in ["", "cmd=spawn\nendcmd\n", "mcmd=\nendcmd\n", "endcmd\n"] {
            assert!(matches!(Message::parse_mcmd(bad), Err(DecodeError::NoCommand(_))), "{bad:?}");
        }
    }

    #[test]
    fn v2_round_trip_and_escaping() {
        let m = msg("kvs-get-response", &[("found", "TRUE"), ("value", "a;b=c;;"), ("empty", ""), ("rc", "0")]);
        let wire = m.to_v2();
        let body = "cmd=kvs-get-response;found=TRUE;value=a;;b=c;;;;;empty=;rc=0;";
        assert_eq!(wire, format!("{:<6}{body}", body.len()));
        assert_eq!(&wire[..6], "61    ");
        assert_eq!(parse_v2_length(&wire.as_bytes()[..6]), Ok(body.len()));
        assert_eq!(Message::parse_v2_body(&wire[6..]), Ok(m));
        let bare = Message::new("kvs-fence");
        assert_eq!(bare.to_v2(), "14    cmd=kvs-fence;");
        assert_eq!(Message::parse_v2_body("cmd=kvs-fence;"), Ok(bare));
    }

    #[test]
    fn v2_edge_cases() {
        // Without the last `;`, with empty fields, a key without `=`, a
        // second `cmd` (an argument), `=` inside a value.
        let m = Message::parse_v2_body("cmd=x;;;k=a=b;;flag;cmd=y;last=1").unwrap();
        assert_eq!(m.cmd, "x;");
        let m = Message::parse_v2_body("cmd=x;k=a=b;;flag;cmd=y;last=1").unwrap();
        assert_eq!(m, msg("x", &[("k", "a=b;flag"), ("cmd", "y"), ("last", "1")]));
        let m = Message::parse_v2_body(";cmd=x;;;k=v;;;").unwrap();
        assert_eq!(m, msg("x;", &[("k", "v;")]));
        assert_eq!(v2_response_name("kvs-put"), "kvs-put-response");
    }

    #[test]
    fn v2_garbage_is_an_error() {
        for bad in ["", ";", "k=v;", "cmd=;k=v;", "cmd", ";;;;"] {
            assert!(matches!(Message::parse_v2_body(bad), Err(DecodeError::NoCommand(_))), "{bad:?}");
        }
        for bad in [&b"      "[..], b"abc   ", b"-1    ", b"", b"\xff\xfe12  "] {
            assert!(matches!(parse_v2_length(bad), Err(DecodeError::BadLength(_))), "{bad:?}");
        }
        assert_eq!(parse_v2_length(b"  12  "), Ok(12));
    }

    #[test]
    fn init_handshake() {
        assert_eq!(init_request(Wire::V1).to_v1_line(), "cmd=init pmi_version=1 pmi_subversion=1\n");
        assert_eq!(init_request(Wire::V2).to_v1_line(), "cmd=init pmi_version=2 pmi_subversion=0\n");
        assert_eq!(
            init_response(Wire::V2, true).to_v1_line(),
            "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n"
        );
        assert_eq!(
            init_response(Wire::V1, false).to_v1_line(),
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1\n"
        );
    }

    #[test]
    fn frames() {
        let mut input = b"cmd=a\r\ncmd=b x=1\nmcmd=spawn\nnprocs=1\nendcmd\ncmd=c".to_vec();
        assert_eq!(take_frame(&mut input, Wire::V1), Ok(Some(Frame::V1("cmd=a\r".into()))));
        assert_eq!(take_frame(&mut input, Wire::V1), Ok(Some(Frame::V1("cmd=b x=1".into()))));
        assert_eq!(take_frame(&mut input, Wire::V1), Ok(Some(Frame::Mcmd("mcmd=spawn\nnprocs=1\nendcmd\n".into()))));
        assert_eq!(take_frame(&mut input, Wire::V1), Ok(None));
        assert_eq!(input, b"cmd=c");
        let mut input = b"mcmd=spawn\nnprocs=1\n".to_vec();
        assert_eq!(take_frame(&mut input, Wire::V1), Ok(None));

        let mut input = Message::new("kvs-fence").to_v2().into_bytes();
        input.extend_from_slice(b"13    cmd=fina");
        assert_eq!(take_frame(&mut input, Wire::V2), Ok(Some(Frame::V2("cmd=kvs-fence;".into()))));
        assert_eq!(take_frame(&mut input, Wire::V2), Ok(None));
        input.extend_from_slice(b"lize;");
        assert_eq!(take_frame(&mut input, Wire::V2), Ok(Some(Frame::V2("cmd=finalize;".into()))));
        assert_eq!(take_frame(&mut input, Wire::V2), Ok(None));
        let mut short = b"12".to_vec();
        assert_eq!(take_frame(&mut short, Wire::V2), Ok(None));
    }

    #[test]
    fn broken_frames_are_errors() {
        let mut input = b"abcdefcmd=x;".to_vec();
        assert!(matches!(take_frame(&mut input, Wire::V2), Err(DecodeError::BadLength(_))));
        let mut input = vec![b'x'; MAX_MESSAGE + 1];
        assert_eq!(take_frame(&mut input, Wire::V1), Err(DecodeError::Unterminated));
        let mut input = b"mcmd=".to_vec();
        input.resize(MAX_MESSAGE + 1, b'x');
        assert_eq!(take_frame(&mut input, Wire::V1), Err(DecodeError::Unterminated));
        // Invalid UTF-8 is replaced and then fails to parse, never panics.
        let mut input = b"\xffcmd=x\n".to_vec();
        let Ok(Some(Frame::V1(line))) = take_frame(&mut input, Wire::V1) else { panic!() };
        assert!(Message::parse_v1_line(&line).is_err());
        assert_eq!(DecodeError::TooLong(5).to_string(), "PMI-2 message of 5 bytes is too long");
    }
}
