//! A sanity check of an object before it is cached or handed to the loader: an
//! ELF relocatable file for the BPF machine that carries BTF.
//!
//! Only the ELF header and the section headers are read, by hand and with every
//! offset bounds-checked, so a damaged or hostile prebuilt object gives an error,
//! never a panic. A full ELF crate would be a large dependency for five fields.

use std::fmt;

/// `e_machine` of eBPF objects (`EM_BPF`).
pub const EM_BPF: u16 = 247;
/// `e_type` of relocatable files (`ET_REL`), which is what libbpf loads.
const ET_REL: u16 = 1;
/// The ELF64 header is 64 bytes.
const EHDR_SIZE: usize = 64;
/// An ELF64 section header is 64 bytes.
const SHDR_SIZE: usize = 64;
/// `e_shstrndx` value meaning "the real index is in section 0's `sh_link`".
const SHN_XINDEX: u16 = 0xffff;
/// More section headers than any BPF object has; bounds the work on hostile input.
const MAX_SECTIONS: u64 = 65_536;

/// Why bytes are not a usable CO-RE BPF object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElfProblem {
    /// The file does not start with `\x7fELF`.
    NotElf,
    /// A 32-bit ELF file (BPF objects are ELF64).
    NotElf64,
    /// The byte-order byte is neither little nor big endian.
    BadByteOrder(u8),
    /// An ELF file for another machine (x86-64 is 62, aarch64 183).
    WrongMachine(u16),
    /// Not a relocatable object (an executable or shared library).
    NotRelocatable(u16),
    /// A header or table points outside the file.
    Truncated(&'static str),
    /// No `.BTF` section: compiled without `-g`.
    NoBtf,
}

impl fmt::Display for ElfProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElfProblem::NotElf => f.write_str("it is not an ELF file"),
            ElfProblem::NotElf64 => f.write_str("it is a 32-bit ELF file; BPF objects are 64-bit ELF"),
            ElfProblem::BadByteOrder(b) => write!(f, "its ELF header has an unknown byte order ({b})"),
            ElfProblem::WrongMachine(m) => {
                write!(f, "it is an ELF file for machine {m}, not for BPF ({EM_BPF}); was it compiled with `-target bpf`?")
            }
            ElfProblem::NotRelocatable(t) => {
                write!(f, "it is an ELF file of type {t}, not a relocatable object (compile with `-c`)")
            }
            ElfProblem::Truncated(what) => write!(f, "it is truncated or damaged ({what} lies outside the file)"),
            ElfProblem::NoBtf => f.write_str(
                "it has no .BTF section, which CO-RE relocations and HIKe program signatures need; compile it with `-g`",
            ),
        }
    }
}

/// Reads fixed-size integers at offsets, in the file's byte order, refusing reads
/// past the end.
struct Reader<'a> {
    bytes: &'a [u8],
    big_endian: bool,
}

impl<'a> Reader<'a> {
    fn slice(&self, offset: u64, len: u64, what: &'static str) -> Result<&'a [u8], ElfProblem> {
        let start = usize::try_from(offset).map_err(|_| ElfProblem::Truncated(what))?;
        let len = usize::try_from(len).map_err(|_| ElfProblem::Truncated(what))?;
        let end = start.checked_add(len).ok_or(ElfProblem::Truncated(what))?;
        self.bytes.get(start..end).ok_or(ElfProblem::Truncated(what))
    }

    fn array<const N: usize>(&self, offset: u64, what: &'static str) -> Result<[u8; N], ElfProblem> {
        let s = self.slice(offset, N as u64, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(s);
        Ok(out)
    }

    fn u16(&self, offset: u64, what: &'static str) -> Result<u16, ElfProblem> {
        let b = self.array::<2>(offset, what)?;
        Ok(if self.big_endian { u16::from_be_bytes(b) } else { u16::from_le_bytes(b) })
    }

    fn u32(&self, offset: u64, what: &'static str) -> Result<u32, ElfProblem> {
        let b = self.array::<4>(offset, what)?;
        Ok(if self.big_endian { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
    }

    fn u64(&self, offset: u64, what: &'static str) -> Result<u64, ElfProblem> {
        let b = self.array::<8>(offset, what)?;
        Ok(if self.big_endian { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) })
    }
}

/// One section header's fields that matter here.
struct Section {
    name: u32,
    offset: u64,
    size: u64,
    link: u32,
}

/// Checks that `bytes` are an ELF64 relocatable object for the BPF machine with a
/// `.BTF` section.
pub fn check_bpf_object(bytes: &[u8]) -> Result<(), ElfProblem> {
    match bpf_section(bytes, b".BTF")? {
        Some(_) => Ok(()),
        None => Err(ElfProblem::NoBtf),
    }
}

/// The compiler that made a BPF object, as it names itself ("Debian clang version
/// 14.0.6"): in `.comment` when it wrote one, else the DWARF producer in
/// `.debug_str` (clang writes no `.comment` for BPF). `None` when neither says.
pub fn compiler_of(bytes: &[u8]) -> Option<String> {
    const MAX_PRODUCER: usize = 256;
    [&b".comment"[..], b".debug_str"].into_iter().find_map(|name| {
        let section = bpf_section(bytes, name).ok()??;
        section
            .split(|&b| b == 0)
            .filter(|s| s.len() <= MAX_PRODUCER)
            .filter_map(|s| std::str::from_utf8(s).ok())
            .find(|s| s.contains("clang version") || s.starts_with("GCC:"))
            .map(|s| s.chars().filter(|c| !c.is_control()).collect())
    })
}

/// The contents of the section `wanted` of a BPF object (`None`: it has none).
fn bpf_section<'a>(bytes: &'a [u8], wanted: &[u8]) -> Result<Option<&'a [u8]>, ElfProblem> {
    if bytes.len() < 4 || &bytes[..4] != b"\x7fELF" {
        return Err(ElfProblem::NotElf);
    }
    if bytes.len() < EHDR_SIZE {
        return Err(ElfProblem::Truncated("the ELF header"));
    }
    if bytes[4] != 2 {
        return Err(ElfProblem::NotElf64);
    }
    // BPF objects are little-endian (`bpfel`) or big-endian (`bpfeb`).
    let big_endian = match bytes[5] {
        1 => false,
        2 => true,
        other => return Err(ElfProblem::BadByteOrder(other)),
    };
    let r = Reader { bytes, big_endian };
    let machine = r.u16(18, "e_machine")?;
    if machine != EM_BPF {
        return Err(ElfProblem::WrongMachine(machine));
    }
    let kind = r.u16(16, "e_type")?;
    if kind != ET_REL {
        return Err(ElfProblem::NotRelocatable(kind));
    }

    let shoff = r.u64(0x28, "e_shoff")?;
    let shentsize = u64::from(r.u16(0x3a, "e_shentsize")?);
    let mut shnum = u64::from(r.u16(0x3c, "e_shnum")?);
    let shstrndx = r.u16(0x3e, "e_shstrndx")?;
    if shoff == 0 {
        return Ok(None);
    }
    if shentsize < SHDR_SIZE as u64 {
        return Err(ElfProblem::Truncated("the section header table"));
    }
    let section = |index: u64| -> Result<Section, ElfProblem> {
        let what = "a section header";
        let at = index.checked_mul(shentsize).and_then(|o| o.checked_add(shoff)).ok_or(ElfProblem::Truncated(what))?;
        // Read the whole header first so a header cut short is reported as such.
        r.slice(at, SHDR_SIZE as u64, what)?;
        Ok(Section {
            name: r.u32(at, what)?,
            offset: r.u64(at + 0x18, what)?,
            size: r.u64(at + 0x20, what)?,
            link: r.u32(at + 0x28, what)?,
        })
    };
    // With 0xff00 sections or more, the real count and string table index live in
    // section 0 (ELF gABI "extended section numbering").
    let first = section(0)?;
    if shnum == 0 {
        shnum = first.size;
    }
    if shnum > MAX_SECTIONS {
        return Err(ElfProblem::Truncated("the section count"));
    }
    let strndx = if shstrndx == SHN_XINDEX { u64::from(first.link) } else { u64::from(shstrndx) };
    if strndx >= shnum {
        return Err(ElfProblem::Truncated("the section name table"));
    }
    let strtab = section(strndx)?;
    let names = r.slice(strtab.offset, strtab.size, "the section name table")?;

    for index in 0..shnum {
        let s = section(index)?;
        let start = usize::try_from(s.name).map_err(|_| ElfProblem::Truncated("a section name"))?;
        let rest = names.get(start..).ok_or(ElfProblem::Truncated("a section name"))?;
        let name = rest.split(|&b| b == 0).next().unwrap_or_default();
        if name == wanted {
            return r.slice(s.offset, s.size, "a section").map(Some);
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 little-endian relocatable object for `machine` with the
    /// given section names (plus the null section and `.shstrtab`).
    fn fake_elf(machine: u16, sections: &[&str]) -> Vec<u8> {
        let mut names = vec![0u8];
        let mut name_offsets = Vec::new();
        for s in sections.iter().chain(std::iter::once(&".shstrtab")) {
            name_offsets.push(names.len() as u32);
            names.extend_from_slice(s.as_bytes());
            names.push(0);
        }
        let names_off = EHDR_SIZE as u64;
        let shoff = names_off + names.len() as u64;
        let shnum = sections.len() as u16 + 2;
        let mut out = vec![0u8; EHDR_SIZE];
        out[..4].copy_from_slice(b"\x7fELF");
        out[4] = 2;
        out[5] = 1;
        out[6] = 1;
        out[16..18].copy_from_slice(&ET_REL.to_le_bytes());
        out[18..20].copy_from_slice(&machine.to_le_bytes());
        out[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        out[0x3a..0x3c].copy_from_slice(&(SHDR_SIZE as u16).to_le_bytes());
        out[0x3c..0x3e].copy_from_slice(&shnum.to_le_bytes());
        out[0x3e..0x40].copy_from_slice(&(shnum - 1).to_le_bytes());
        out.extend_from_slice(&names);
        out.extend_from_slice(&[0u8; SHDR_SIZE]);
        for (i, off) in name_offsets.iter().enumerate() {
            let mut sh = [0u8; SHDR_SIZE];
            sh[..4].copy_from_slice(&off.to_le_bytes());
            if i == name_offsets.len() - 1 {
                sh[0x18..0x20].copy_from_slice(&names_off.to_le_bytes());
                sh[0x20..0x28].copy_from_slice(&(names.len() as u64).to_le_bytes());
            }
            out.extend_from_slice(&sh);
        }
        out
    }

    #[test]
    fn the_compiler_is_read_from_the_dwarf_producer() {
        // `.debug_str` made to hold the section names, one of which is a producer.
        let mut elf = fake_elf(EM_BPF, &[".BTF", ".debug_str", "Debian clang version 14.0.6"]);
        let shoff = u64::from_le_bytes(elf[0x28..0x30].try_into().unwrap()) as usize;
        let shnum = u16::from_le_bytes(elf[0x3c..0x3e].try_into().unwrap()) as usize;
        let names = shoff + (shnum - 1) * SHDR_SIZE;
        let debug_str = shoff + 2 * SHDR_SIZE;
        let extent: [u8; 16] = elf[names + 0x18..names + 0x28].try_into().unwrap();
        elf[debug_str + 0x18..debug_str + 0x28].copy_from_slice(&extent);
        assert_eq!(compiler_of(&elf).as_deref(), Some("Debian clang version 14.0.6"));
        assert_eq!(compiler_of(&fake_elf(EM_BPF, &[".BTF"])), None);
        assert_eq!(compiler_of(b"not an object"), None);
    }

    #[test]
    fn accepts_bpf_with_btf() {
        assert_eq!(check_bpf_object(&fake_elf(EM_BPF, &[".text", ".BTF", ".BTF.ext"])), Ok(()));
    }

    #[test]
    fn refuses_other_objects() {
        assert_eq!(check_bpf_object(b"hello"), Err(ElfProblem::NotElf));
        assert_eq!(check_bpf_object(&fake_elf(62, &[".BTF"])), Err(ElfProblem::WrongMachine(62)));
        assert_eq!(check_bpf_object(&fake_elf(EM_BPF, &[".text", ".BTF.ext"])), Err(ElfProblem::NoBtf));
        let mut elf32 = fake_elf(EM_BPF, &[".BTF"]);
        elf32[4] = 1;
        assert_eq!(check_bpf_object(&elf32), Err(ElfProblem::NotElf64));
        let mut exec = fake_elf(EM_BPF, &[".BTF"]);
        exec[16] = 2;
        assert_eq!(check_bpf_object(&exec), Err(ElfProblem::NotRelocatable(2)));
        assert!(ElfProblem::WrongMachine(62).to_string().contains("-target bpf"));
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let good = fake_elf(EM_BPF, &[".text", ".BTF"]);
        for len in 0..good.len() {
            assert!(check_bpf_object(&good[..len]).is_err(), "{len} bytes");
        }
    }

    #[test]
    fn hostile_offsets_are_errors() {
        let mut bad = fake_elf(EM_BPF, &[".BTF"]);
        bad[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(check_bpf_object(&bad), Err(ElfProblem::Truncated(_))));
        let mut bad = fake_elf(EM_BPF, &[".BTF"]);
        bad[0x3e..0x40].copy_from_slice(&500u16.to_le_bytes());
        assert!(matches!(check_bpf_object(&bad), Err(ElfProblem::Truncated(_))));
        // Flip every byte of the header and tables in turn: never a panic.
        let good = fake_elf(EM_BPF, &[".text", ".BTF"]);
        for i in 0..good.len() {
            let mut b = good.clone();
            b[i] ^= 0xff;
            let _ = check_bpf_object(&b);
        }
    }
}
