//! Converts the journals of a trace directory to Parquet and says how long
//! it took: `cargo run --release -p trace-format --example convert -- DIR`
//! (what `mpitrace record` does after a job; run the program with
//! `MPITRACE_NO_CONVERT=1` to leave the journals).

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: convert TRACE_DIR");
        std::process::exit(2);
    };
    let t0 = std::time::Instant::now();
    match trace_format::finish_dir(std::path::Path::new(&dir), &[], false) {
        Ok(fin) => {
            let secs = t0.elapsed().as_secs_f64();
            let events: usize = fin.converted.iter().map(|c| c.events).sum();
            let bytes: u64 = fin.converted.iter().map(|c| c.bytes).sum();
            println!(
                "{} ranks, {events} events in {secs:.2} s ({:.1} M events/s), {bytes} bytes ({:.2} bytes/event)",
                fin.converted.len(),
                events as f64 / secs / 1e6,
                bytes as f64 / events.max(1) as f64
            );
            for p in &fin.problems {
                println!("problem: {p}");
            }
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
