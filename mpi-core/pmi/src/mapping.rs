//! The value of the `PMI_process_mapping` key: which node every rank runs
//! on, as `(vector,(node,count,block),...)`, where a triple means `block`
//! consecutive ranks on each of `count` consecutive nodes from `node` on, and
//! the vector repeats until every rank has a node (MPICH's hydra format).

/// The mapping of the ranks whose node indices are `nodes` (rank order).
/// The shortest prefix of triples that reproduces the placement when
/// repeated is enough (round robin is one triple).
pub fn format_process_mapping(nodes: &[usize]) -> String {
    // Runs of one node, then runs of equal-size runs on consecutive nodes.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &node in nodes {
        match runs.last_mut() {
            Some((run_node, len)) if *run_node == node => *len += 1,
            _ => runs.push((node, 1)),
        }
    }
    let mut triples: Vec<(usize, usize, usize)> = Vec::new();
    for (node, len) in runs {
        match triples.last_mut() {
            Some((start, count, block)) if *block == len && *start + *count == node => *count += 1,
            _ => triples.push((node, 1, len)),
        }
    }
    let expand = |prefix: &[(usize, usize, usize)]| -> Vec<usize> {
        let mut out = Vec::with_capacity(nodes.len());
        while out.len() < nodes.len() {
            for &(start, count, block) in prefix {
                for node in start..start + count {
                    out.extend(std::iter::repeat_n(node, block));
                }
            }
        }
        out.truncate(nodes.len());
        out
    };
    let period = (1..triples.len()).find(|&p| expand(&triples[..p]) == nodes).unwrap_or(triples.len());
    let body: Vec<String> = triples[..period].iter().map(|(n, c, b)| format!("({n},{c},{b})")).collect();
    format!("(vector,{})", body.join(","))
}

/// The node index of each of `size` ranks from a mapping value; `None` when
/// the value is not a well-formed, non-empty mapping.
pub fn parse_process_mapping(value: &str, size: usize) -> Option<Vec<usize>> {
    let body = value.trim().strip_prefix("(vector,")?.strip_suffix(')')?;
    let mut triples = Vec::new();
    for triple in body.split("),") {
        let numbers: Vec<usize> = triple
            .trim_matches(|c| c == '(' || c == ')')
            .split(',')
            .map(|s| s.trim().parse().ok())
            .collect::<Option<_>>()?;
        let [start, count, block] = numbers[..] else { return None };
        start.checked_add(count)?;
        triples.push((start, count, block));
    }
    // One period of the vector, expanded only as far as the job needs: a
    // mapping that claims more ranks than that must not cost memory.
    let needed = size.max(1);
    let mut period = Vec::new();
    'expand: for &(start, count, block) in &triples {
        for node in start..start + count {
            for _ in 0..block {
                if period.len() == needed {
                    break 'expand;
                }
                period.push(node);
            }
        }
    }
    if period.is_empty() {
        return None;
    }
    Some((0..size).map(|rank| period[rank % period.len()]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format() {
        assert_eq!(format_process_mapping(&[0, 0, 0, 0]), "(vector,(0,1,4))");
        assert_eq!(format_process_mapping(&[0, 0, 1, 1]), "(vector,(0,2,2))");
        assert_eq!(format_process_mapping(&[0, 1, 0, 1]), "(vector,(0,2,1))");
        assert_eq!(format_process_mapping(&[0, 0, 1]), "(vector,(0,1,2),(1,1,1))");
        assert_eq!(format_process_mapping(&[0, 1, 2, 0, 1]), "(vector,(0,3,1))");
        assert_eq!(format_process_mapping(&[0, 1, 1, 0, 1]), "(vector,(0,1,1),(1,1,2))");
        assert_eq!(format_process_mapping(&[0, 1, 1, 0, 0]), "(vector,(0,1,1),(1,1,2),(0,1,2))");
    }

    #[test]
    fn parse() {
        assert_eq!(parse_process_mapping("(vector,(0,1,4))", 4), Some(vec![0, 0, 0, 0]));
        assert_eq!(parse_process_mapping("(vector,(0,2,2))", 4), Some(vec![0, 0, 1, 1]));
        assert_eq!(parse_process_mapping("(vector,(0,2,1))", 4), Some(vec![0, 1, 0, 1]));
        assert_eq!(parse_process_mapping("(vector,(0,1,2),(1,1,1))", 3), Some(vec![0, 0, 1]));
        assert_eq!(parse_process_mapping(" (vector,(0, 1, 2),(1,1,1))\n", 3), Some(vec![0, 0, 1]));
        assert_eq!(parse_process_mapping("(vector,(0,1,4))", 0), Some(vec![]));
    }

    #[test]
    fn garbage_is_none_never_a_panic() {
        for bad in [
            "garbage",
            "",
            "(vector,)",
            "(vector,(0,1))",
            "(vector,(0,1,2,3))",
            "(vector,(0,1,x))",
            "(vector,(0,0,4))",
            "(vector,(0,1,0))",
            "(vector,(0,1,4),garbage)",
            "(vector,(18446744073709551615,2,1))",
        ] {
            assert_eq!(parse_process_mapping(bad, 4), None, "{bad:?}");
        }
        // A mapping claiming far more ranks than the job is cut short.
        let huge = format!("(vector,(0,{},{}))", usize::MAX / 2, usize::MAX);
        assert_eq!(parse_process_mapping(&huge, 3), Some(vec![0, 0, 0]));
    }

    #[test]
    fn round_trip() {
        let placements: [&[usize]; 7] =
            [&[0], &[0, 0, 0], &[0, 1, 2, 3], &[0, 0, 1, 1, 2], &[1, 0, 1, 0], &[0, 1, 1, 0, 0], &[2, 2, 0, 0, 1, 1]];
        for nodes in placements {
            let value = format_process_mapping(nodes);
            assert_eq!(parse_process_mapping(&value, nodes.len()).as_deref(), Some(nodes), "{value}");
        }
    }
}
