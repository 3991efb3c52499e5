//! The table of MPI procedures (`data/mpi-api.tsv`, generated from
//! pympistandard by `gen/generate.py`), parsed.

/// Direction of a parameter, as the standard gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    In,
    Out,
    InOut,
}

/// One parameter of a procedure.
#[derive(Clone, Debug)]
pub struct Param {
    /// C type without array declarator, e.g. `const void*`, `MPI_Comm`.
    pub ctype: &'static str,
    pub name: &'static str,
    /// Array declarator (`[]`, `[][3]`) or empty.
    pub suffix: &'static str,
    /// The standard's semantic kind (`BUFFER`, `RANK`, `TAG`, `DATATYPE`, ...).
    pub kind: &'static str,
    pub dir: Dir,
}

impl Param {
    /// Pointer depth of the parameter as passed in C (arrays decay to pointers).
    pub fn pointer_depth(&self) -> usize {
        self.ctype.matches('*').count() + usize::from(!self.suffix.is_empty())
    }
    /// The base C type without `const` and `*`.
    pub fn base(&self) -> &'static str {
        self.ctype.trim_start_matches("const ").trim_end_matches('*').trim()
    }
}

/// One procedure of the C API.
#[derive(Clone, Debug)]
pub struct Procedure {
    /// `MPI_...` name; the profiling name is `P` + this.
    pub name: &'static str,
    pub ret: &'static str,
    pub params: Vec<Param>,
    /// Removed from the standard but exported by MPICH.
    pub legacy: bool,
    /// A macro in the MPICH ABI, never an exported symbol.
    pub is_macro: bool,
    /// C-variadic after the listed parameters (`MPI_Pcontrol`).
    pub varargs: bool,
    /// A large-count (`_c`) variant.
    pub large: bool,
    /// An MPICH extension (`MPIX_X`, profiling name `PMPIX_X`).
    pub mpix: bool,
}

impl Procedure {
    pub fn pname(&self) -> String {
        format!("P{}", self.name)
    }
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }
}

/// The raw table text.
pub const TABLE_TSV: &str = include_str!("../data/mpi-api.tsv");

/// Every procedure of the table: the standard's (and the legacy ones)
/// sorted by name, then the MPICH extensions (`MPIX_`) sorted by name.
pub fn procedures() -> Vec<Procedure> {
    TABLE_TSV.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).map(parse_line).collect()
}

fn parse_line(line: &'static str) -> Procedure {
    let mut cols = line.split('\t');
    let name = cols.next().expect("name");
    let ret = cols.next().expect("return type");
    let flags = cols.next().expect("flags");
    let params = cols
        .map(|p| {
            let f: Vec<&'static str> = p.split('|').collect();
            assert_eq!(f.len(), 5, "bad parameter `{p}` of {name}");
            Param {
                ctype: f[0],
                name: f[1],
                suffix: f[2],
                kind: f[3],
                dir: match f[4] {
                    "in" => Dir::In,
                    "out" => Dir::Out,
                    _ => Dir::InOut,
                },
            }
        })
        .collect();
    let has = |flag: &str| flags.split(',').any(|f| f == flag);
    Procedure {
        name,
        ret,
        params,
        legacy: has("legacy"),
        is_macro: has("macro"),
        varargs: has("varargs"),
        large: has("large"),
        mpix: has("mpix"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_the_standard() {
        let procs = procedures();
        assert!(procs.len() > 650, "only {} procedures", procs.len());
        let send = procs.iter().find(|p| p.name == "MPI_Send").unwrap();
        assert_eq!(send.params.len(), 6);
        assert_eq!(send.params[3].kind, "RANK");
        assert_eq!(send.params[0].ctype, "const void*");
        let pc = procs.iter().find(|p| p.name == "MPI_Pcontrol").unwrap();
        assert!(pc.varargs);
        let c2f = procs.iter().find(|p| p.name == "MPI_Comm_c2f").unwrap();
        assert!(c2f.is_macro);
        assert!(procs.iter().any(|p| p.name == "MPI_Type_struct" && p.legacy));
        let revoke = procs.iter().find(|p| p.name == "MPIX_Comm_revoke").unwrap();
        assert!(revoke.mpix && !revoke.legacy);
        assert_eq!(revoke.pname(), "PMPIX_Comm_revoke");
        // The extensions come last, so they never renumber the others.
        let first_mpix = procs.iter().position(|p| p.mpix).unwrap();
        assert!(procs[first_mpix..].iter().all(|p| p.mpix && p.name.starts_with("MPIX_")));
        assert!(procs[..first_mpix].iter().all(|p| p.name.starts_with("MPI_")));
    }
}
