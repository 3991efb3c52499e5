//! CSV exports: exact lines for a trace known by construction.

use analyzers::export::{write_calls_csv, write_messages_csv, CALLS_CSV_HEADER, MESSAGES_CSV_HEADER};
use analyzers::model::Location;
use analyzers::report::analyze;
use analyzers::synth::SynthTrace;

const MS: i64 = 1_000_000;
const US: i64 = 1_000;

fn trace() -> SynthTrace {
    let mut t = SynthTrace::new(2);
    t.with_modules = true;
    t.send(0, 1, 7, 800, 10 * MS, 10 * MS + 10 * US, 0x100);
    t.recv(1, 0, 7, 800, 5 * MS, 10 * MS + 20 * US, 0x200);
    t.coll(0, "MPI_Bcast", 11 * MS, 12 * MS, 0x300, 64, Some(0));
    t.coll(1, "MPI_Bcast", 11 * MS, 12 * MS, 0x300, 64, Some(0));
    t.finalize(20 * MS);
    t
}

#[test]
fn calls_csv_has_one_exact_line_per_call() {
    let mut m = trace().model();
    // A function name with a comma must come out quoted.
    m.symbolize(|s, _| {
        (s.offset == 0x200).then(|| Location { function: Some("recv<a, b>".into()), file: "/src/x.c".into(), line: 9 })
    });
    let mut out = Vec::new();
    let n = write_calls_csv(&m, &Default::default(), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], CALLS_CSV_HEADER);
    assert_eq!(n as usize, lines.len() - 1);
    // Init, Send, Bcast, Finalize on rank 0; Init, Recv, Bcast, Finalize on rank 1.
    assert_eq!(n, 8);
    assert!(lines.contains(&"0,MPI_Send,10000000,10010000,10000,app+0x100,,app+0x100,1,7,800,WORLD"), "{text}");
    assert!(
        lines.contains(&"1,MPI_Recv,5000000,10020000,5020000,x.c:9,\"recv<a, b>\",app+0x200,0,7,800,WORLD"),
        "{text}"
    );
    assert!(lines.contains(&"0,MPI_Bcast,11000000,12000000,1000000,app+0x300,,app+0x300,0,,64,WORLD"), "{text}");
    assert!(lines.iter().any(|l| l.starts_with("1,MPI_Init,0,1000,1000,app+0x10,,app+0x10,,,,")), "{text}");
}

#[test]
fn messages_csv_has_the_matched_messages() {
    let a = analyze(trace().model());
    let mut out = Vec::new();
    let n = write_messages_csv(&a.model, &a.matching, &Default::default(), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(n, 1);
    assert_eq!(text, format!("{MESSAGES_CSV_HEADER}\n0,1,7,WORLD,800,10000000,10020000,20000\n"));
}
