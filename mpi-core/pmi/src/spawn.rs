//! PMI-1 spawn requests (`MPI_Comm_spawn`, `MPI_Comm_spawn_multiple`): one
//! `mcmd=spawn` segment per program, numbered by `spawnssofar` out of
//! `totspawns`; the server starts the job after the last segment and answers
//! `cmd=spawn_result rc=...`.

use crate::Message;

/// One program of a spawn request, as one `mcmd=spawn` segment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpawnSegment {
    /// How many processes run the program.
    pub nprocs: usize,
    /// The program.
    pub execname: String,
    /// Its arguments (`arg1`...).
    pub args: Vec<String>,
    /// Keys for the new job's key-value space (every segment carries them).
    pub preput: Vec<(String, String)>,
    /// Info hints (the launcher reads `wdir`).
    pub info: Vec<(String, String)>,
    /// The number of segments of the request.
    pub totspawns: usize,
    /// This segment's number, from 1.
    pub spawnssofar: usize,
}

impl SpawnSegment {
    /// Whether this is the request's last segment.
    pub fn is_last(&self) -> bool {
        self.spawnssofar == self.totspawns
    }

    /// The segment as a multi-line message (send it with
    /// [`Message::to_mcmd`]). No key or value may contain a newline.
    pub fn to_message(&self) -> Message {
        let mut msg = Message::new("spawn")
            .with("nprocs", self.nprocs.to_string())
            .with("execname", &self.execname)
            .with("totspawns", self.totspawns.to_string())
            .with("spawnssofar", self.spawnssofar.to_string())
            .with("argcnt", self.args.len().to_string());
        for (i, arg) in self.args.iter().enumerate() {
            msg.push(format!("arg{}", i + 1), arg);
        }
        msg.push("preput_num", self.preput.len().to_string());
        for (i, (key, value)) in self.preput.iter().enumerate() {
            msg.push(format!("preput_key_{i}"), key);
            msg.push(format!("preput_val_{i}"), value);
        }
        msg.push("info_num", self.info.len().to_string());
        for (i, (key, value)) in self.info.iter().enumerate() {
            msg.push(format!("info_key_{i}"), key);
            msg.push(format!("info_val_{i}"), value);
        }
        msg
    }

    /// Reads a segment leniently, as clients of different MPICH versions
    /// send them: a missing field is empty, an unreadable count is 0, and a
    /// segment that does not say how many there are is the last.
    pub fn from_message(msg: &Message) -> SpawnSegment {
        let text = |key: &str| msg.get(key).unwrap_or("").to_string();
        let number = |key: &str| msg.get(key).and_then(|v| v.trim().parse::<usize>().ok());
        let count = |key: &str| number(key).unwrap_or(0);
        // A list has at most one entry per line of the message: a huge
        // count from a broken client must not cost time or memory.
        let list_len = |key: &str| count(key).min(msg.args.len());
        let pairs = |num: &str, key: &str, value: &str| -> Vec<(String, String)> {
            (0..list_len(num)).map(|i| (text(&format!("{key}_{i}")), text(&format!("{value}_{i}")))).collect()
        };
        let spawnssofar = count("spawnssofar");
        SpawnSegment {
            nprocs: count("nprocs"),
            execname: text("execname"),
            args: (1..=list_len("argcnt")).map(|i| text(&format!("arg{i}"))).collect(),
            preput: pairs("preput_num", "preput_key", "preput_val"),
            info: pairs("info_num", "info_key", "info_val"),
            totspawns: if msg.get("totspawns").is_some() { count("totspawns") } else { spawnssofar },
            spawnssofar,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn wire_form() {
        let seg = SpawnSegment {
            nprocs: 2,
            execname: "./child".into(),
            args: vec!["x y".into(), "a=b".into()],
            preput: pairs(&[("PARENT_ROOT_PORT_NAME", "tag#0$port#1")]),
            info: pairs(&[("wdir", "/tmp")]),
            totspawns: 2,
            spawnssofar: 1,
        };
        assert_eq!(
            seg.to_message().to_mcmd(),
            "mcmd=spawn\nnprocs=2\nexecname=./child\ntotspawns=2\nspawnssofar=1\nargcnt=2\narg1=x y\narg2=a=b\n\
             preput_num=1\npreput_key_0=PARENT_ROOT_PORT_NAME\npreput_val_0=tag#0$port#1\n\
             info_num=1\ninfo_key_0=wdir\ninfo_val_0=/tmp\nendcmd\n"
        );
        assert!(!seg.is_last());
    }

    #[test]
    fn round_trip() {
        let segments = [
            SpawnSegment { nprocs: 1, execname: "a".into(), totspawns: 1, spawnssofar: 1, ..Default::default() },
            SpawnSegment {
                nprocs: 3,
                execname: "b".into(),
                args: vec!["".into(), "=".into()],
                preput: pairs(&[("k", ""), ("", "v")]),
                info: pairs(&[("host", "n1"), ("wdir", "")]),
                totspawns: 3,
                spawnssofar: 2,
            },
        ];
        for seg in segments {
            let text = seg.to_message().to_mcmd();
            let back = SpawnSegment::from_message(&Message::parse_mcmd(&text).unwrap());
            assert_eq!(back, seg, "{text}");
        }
    }

    #[test]
    fn lenient_reading() {
        let msg = Message::parse_mcmd("mcmd=spawn\nnprocs=x\nargcnt=2\narg1=only\ninfo_num=1\nendcmd\n").unwrap();
        let seg = SpawnSegment::from_message(&msg);
        assert_eq!(seg.nprocs, 0);
        assert_eq!(seg.execname, "");
        assert_eq!(seg.args, vec!["only".to_string(), String::new()]);
        assert_eq!(seg.info, pairs(&[("", "")]));
        assert!(seg.is_last(), "a segment without totspawns is the last");
        let msg = Message::new("spawn").with("totspawns", "2");
        assert!(!SpawnSegment::from_message(&msg).is_last());
        let msg = Message::new("spawn").with("argcnt", usize::MAX.to_string()).with("info_num", "99999999999");
        let seg = SpawnSegment::from_message(&msg);
        assert_eq!((seg.args.len(), seg.info.len()), (2, 2));
    }
}
