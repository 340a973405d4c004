//! Invisible and bidi-control characters, and the normalised copy of a text that the second
//! detection pass reads (invisible characters removed, NFKC folded, with a map back to the
//! original byte offsets).

use std::ops::Range;

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};
use unicode_properties::{GeneralCategory, UnicodeEmoji, UnicodeGeneralCategory};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hidden {
    Invisible,
    Bidi,
}

/// Calls `visit` with the byte offset of every character that is not printable ASCII, tab,
/// newline or carriage return: the only places where something can hide or where NFKC can change
/// the text. Eight bytes at a time, so plain ASCII costs almost nothing.
fn for_each_special(text: &str, mut visit: impl FnMut(usize, char)) {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const SPACE: u64 = 0x2020_2020_2020_2020;
    const DEL: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const ONES: u64 = 0x0101_0101_0101_0101;
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if let Some(chunk) = b.get(i..i + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let w = u64::from_le_bytes(word);
            let below_space = w.wrapping_sub(SPACE) & !w & HIGH;
            let x = w ^ DEL;
            let delete = x.wrapping_sub(ONES) & !x & HIGH;
            if w & HIGH == 0 && below_space == 0 && delete == 0 {
                i += 8;
                continue;
            }
        }
        // Byte by byte through this chunk (a character may run past it).
        let stop = (i + 8).min(b.len());
        while i < stop {
            let c = b[i];
            if c < 0x80 {
                if (c < 0x20 && !matches!(c, b'\t' | b'\n' | b'\r')) || c == 0x7f {
                    visit(i, c as char);
                }
                i += 1;
            } else {
                let ch = text[i..].chars().next().unwrap_or('\u{FFFD}');
                visit(i, ch);
                i += ch.len_utf8();
            }
        }
    }
}

/// Byte offsets of the characters `for_each_special` visits.
#[cfg(test)]
pub(super) fn special_chars(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for_each_special(text, |i, _| out.push(i));
    out
}

/// What the Unicode pass found: hidden-character runs, and the starts of the lines that
/// normalisation changes.
pub(super) struct UnicodeReport {
    pub hidden: Vec<HiddenRun>,
    pub changed_lines: Vec<usize>,
}

/// One pass over the characters that are not plain ASCII. `None` for plain ASCII text.
pub(super) fn analyze(text: &str) -> Option<UnicodeReport> {
    let mut any = false;
    let mut hidden: Vec<HiddenRun> = Vec::new();
    let mut changed_lines: Vec<usize> = Vec::new();
    let mut allowed_until = 0usize;
    // The line of the last change: (start, end), so a line with many changes is found once.
    let mut line: (usize, usize) = (0, 0);
    let mut have_line = false;
    for_each_special(text, |i, c| {
        any = true;
        let len = c.len_utf8();
        if c == '\u{1F3F4}'
            && let Some(end) = flag_tag_sequence_end(text, i + len)
        {
            allowed_until = end;
        }
        if (!have_line || i > line.1) && changes_under_normalization(c) {
            let s = text[..i].rfind('\n').map_or(0, |j| j + 1);
            let e = text[i..].find('\n').map_or(text.len(), |j| i + j);
            line = (s, e);
            have_line = true;
            changed_lines.push(s);
        }
        let Some(kind) = classify(c) else { return };
        if i < allowed_until {
            return;
        }
        let prev = text[..i].chars().next_back();
        let next = text[i + len..].chars().next();
        if !hidden_in_context(i, c, prev, next) {
            return;
        }
        match hidden.last_mut() {
            Some(run) if run.end == i && run.kind == kind => {
                run.end = i + len;
                run.count += 1;
                run.all_same &= run.first == c;
            }
            _ => hidden.push(HiddenRun {
                kind,
                start: i,
                end: i + len,
                first: c,
                count: 1,
                all_same: true,
            }),
        }
    });
    any.then_some(UnicodeReport {
        hidden,
        changed_lines,
    })
}

/// Blocks that are dense, assigned and visible: skips the category lookup for most real text
/// (Latin, punctuation, arrows, box drawing, CJK, kana, Hangul, emoji).
fn surely_visible(c: char) -> bool {
    matches!(c as u32,
        0x00A1..=0x00AC
        | 0x00AE..=0x033F
        | 0x0400..=0x052F
        | 0x2010..=0x2027
        | 0x2030..=0x205E
        | 0x2190..=0x23FF
        | 0x2500..=0x27BF
        | 0x3000..=0x303F
        | 0x3041..=0x3096
        | 0x30A0..=0x30FF
        | 0x4E00..=0x9FFF
        | 0xAC00..=0xD7A3
        | 0xFF01..=0xFF5E
        | 0x1F300..=0x1F64F)
}

/// The context-free class of a character: hidden, bidi control, or visible (`None`).
pub(super) fn classify(c: char) -> Option<Hidden> {
    if c.is_ascii() {
        let b = c as u8;
        return ((b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b == 0x7f)
            .then_some(Hidden::Invisible);
    }
    if surely_visible(c) {
        return None;
    }
    match c {
        '\u{202A}'..='\u{202E}'
        | '\u{2066}'..='\u{2069}'
        | '\u{200E}'
        | '\u{200F}'
        | '\u{061C}' => Some(Hidden::Bidi),
        // Invisible marks and letters that the category alone does not catch.
        '\u{034F}'
        | '\u{115F}'
        | '\u{1160}'
        | '\u{17B4}'
        | '\u{17B5}'
        | '\u{180B}'..='\u{180F}'
        | '\u{3164}'
        | '\u{FE00}'..='\u{FE0F}'
        | '\u{FFA0}'
        | '\u{E0100}'..='\u{E01EF}' => Some(Hidden::Invisible),
        _ => match c.general_category() {
            GeneralCategory::Format
            | GeneralCategory::PrivateUse
            | GeneralCategory::Unassigned
            | GeneralCategory::Control
            | GeneralCategory::Surrogate => Some(Hidden::Invisible),
            _ => None,
        },
    }
}

fn is_cjk_ideograph(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3FFFF)
}

/// Scripts in which ZWJ / ZWNJ are ordinary spelling (Persian, Arabic, Indic, Sinhala, Myanmar,
/// Khmer, Mongolian).
fn joins_in_script(c: char) -> bool {
    matches!(c as u32,
        0x0600..=0x06FF
        | 0x0700..=0x074F
        | 0x0750..=0x077F
        | 0x08A0..=0x08FF
        | 0x0900..=0x0DFF
        | 0x1000..=0x109F
        | 0x1780..=0x18AF
        | 0xFB50..=0xFDFF
        | 0xFE70..=0xFEFC)
}

/// May a ZWJ follow this character inside an emoji sequence?
fn emoji_before_joiner(c: char) -> bool {
    c == '\u{FE0F}' || (!c.is_ascii() && c != '\u{200D}' && c.is_emoji_char_or_emoji_component())
}

/// After U+1F3F4 WAVING BLACK FLAG: a subdivision tag sequence (`gbsct`, …) closed by CANCEL TAG.
/// Returns the byte offset after the CANCEL TAG.
fn flag_tag_sequence_end(text: &str, from: usize) -> Option<usize> {
    let mut count = 0;
    for (i, c) in text[from..].char_indices() {
        match c {
            '\u{E0030}'..='\u{E0039}' | '\u{E0061}'..='\u{E007A}' => count += 1,
            '\u{E007F}' if (2..=7).contains(&count) => return Some(from + i + c.len_utf8()),
            _ => return None,
        }
        if count > 7 {
            return None;
        }
    }
    None
}

/// A run of adjacent hidden characters of one kind.
#[derive(Debug, Clone)]
pub(super) struct HiddenRun {
    pub kind: Hidden,
    pub start: usize,
    pub end: usize,
    pub first: char,
    pub count: usize,
    pub all_same: bool,
}

/// Is this hidden-class character really hidden here, or ordinary text (emoji sequences, a BOM
/// at the start, joiners inside Persian or Indic words, ideographic variation selectors)?
fn hidden_in_context(i: usize, c: char, prev: Option<char>, next: Option<char>) -> bool {
    let allowed = match c {
        // A byte-order mark at the very start is an encoding artefact, not hidden text.
        '\u{FEFF}' => i == 0,
        '\u{200D}' => {
            (prev.is_some_and(emoji_before_joiner)
                && next.is_some_and(|n| !n.is_ascii() && n.is_emoji_char()))
                || (prev.is_some_and(joins_in_script) && next.is_some_and(joins_in_script))
        }
        '\u{200C}' => prev.is_some_and(joins_in_script) && next.is_some_and(joins_in_script),
        // Emoji / text presentation selectors right after an emoji character (keycaps too).
        '\u{FE0E}' | '\u{FE0F}' => prev.is_some_and(|p| p.is_emoji_char()),
        // One ideographic variation selector after a CJK ideograph (Japanese name variants).
        '\u{FE00}'..='\u{FE0D}' | '\u{E0100}'..='\u{E01EF}' => prev.is_some_and(is_cjk_ideograph),
        // Mongolian free variation selectors after a Mongolian letter.
        '\u{180B}'..='\u{180D}' | '\u{180F}' => {
            prev.is_some_and(|p| ('\u{1820}'..='\u{18AA}').contains(&p))
        }
        _ => false,
    };
    !allowed
}

/// `U+200B ZERO WIDTH SPACE`: the code point and a name, for previews.
pub(super) fn describe(c: char) -> String {
    let cp = c as u32;
    let name: String = match cp {
        0x00 => "NULL".into(),
        0x08 => "BACKSPACE".into(),
        0x1B => "ESCAPE".into(),
        0x7F => "DELETE".into(),
        0x00AD => "SOFT HYPHEN".into(),
        0x034F => "COMBINING GRAPHEME JOINER".into(),
        0x061C => "ARABIC LETTER MARK".into(),
        0x115F => "HANGUL CHOSEONG FILLER".into(),
        0x1160 => "HANGUL JUNGSEONG FILLER".into(),
        0x17B4 => "KHMER VOWEL INHERENT AQ".into(),
        0x17B5 => "KHMER VOWEL INHERENT AA".into(),
        0x180E => "MONGOLIAN VOWEL SEPARATOR".into(),
        0x180B..=0x180D | 0x180F => format!(
            "MONGOLIAN FREE VARIATION SELECTOR {}",
            match cp {
                0x180F => 4,
                _ => cp - 0x180A,
            }
        ),
        0x200B => "ZERO WIDTH SPACE".into(),
        0x200C => "ZERO WIDTH NON-JOINER".into(),
        0x200D => "ZERO WIDTH JOINER".into(),
        0x200E => "LEFT-TO-RIGHT MARK".into(),
        0x200F => "RIGHT-TO-LEFT MARK".into(),
        0x202A => "LEFT-TO-RIGHT EMBEDDING".into(),
        0x202B => "RIGHT-TO-LEFT EMBEDDING".into(),
        0x202C => "POP DIRECTIONAL FORMATTING".into(),
        0x202D => "LEFT-TO-RIGHT OVERRIDE".into(),
        0x202E => "RIGHT-TO-LEFT OVERRIDE".into(),
        0x2060 => "WORD JOINER".into(),
        0x2061 => "FUNCTION APPLICATION".into(),
        0x2062 => "INVISIBLE TIMES".into(),
        0x2063 => "INVISIBLE SEPARATOR".into(),
        0x2064 => "INVISIBLE PLUS".into(),
        0x2066 => "LEFT-TO-RIGHT ISOLATE".into(),
        0x2067 => "RIGHT-TO-LEFT ISOLATE".into(),
        0x2068 => "FIRST STRONG ISOLATE".into(),
        0x2069 => "POP DIRECTIONAL ISOLATE".into(),
        0x3164 => "HANGUL FILLER".into(),
        0xFE00..=0xFE0F => format!("VARIATION SELECTOR-{}", cp - 0xFE00 + 1),
        0xFEFF => "ZERO WIDTH NO-BREAK SPACE".into(),
        0xFFA0 => "HALFWIDTH HANGUL FILLER".into(),
        0xFFF9 => "INTERLINEAR ANNOTATION ANCHOR".into(),
        0xFFFA => "INTERLINEAR ANNOTATION SEPARATOR".into(),
        0xFFFB => "INTERLINEAR ANNOTATION TERMINATOR".into(),
        0xE0001 => "LANGUAGE TAG".into(),
        0xE0020..=0xE007E => "TAG CHARACTER".into(),
        0xE007F => "CANCEL TAG".into(),
        0xE0100..=0xE01EF => format!("VARIATION SELECTOR-{}", cp - 0xE0100 + 17),
        _ => match c.general_category() {
            GeneralCategory::Control => "CONTROL CHARACTER".into(),
            GeneralCategory::PrivateUse => "PRIVATE USE CHARACTER".into(),
            GeneralCategory::Unassigned => "UNASSIGNED CODE POINT".into(),
            GeneralCategory::Format => "FORMAT CHARACTER".into(),
            _ => "INVISIBLE CHARACTER".into(),
        },
    };
    format!("U+{cp:04X} {name}")
}

/// The preview of a run: the first character described, and how many there are.
pub(super) fn describe_run(run: &HiddenRun) -> String {
    let first = describe(run.first);
    match run.count {
        1 => first,
        n if run.all_same => format!("{first} \u{d7}{n}"),
        n => format!("{first} and {} more", n - 1),
    }
}

/// Characters that NFKC leaves alone without asking the tables: the bulk of CJK, kana, Hangul,
/// Latin-1 letters, common punctuation and arrows.
fn surely_nfkc_stable(c: char) -> bool {
    matches!(c as u32,
        0x00C0..=0x00FF
        | 0x0391..=0x03A9
        | 0x03B1..=0x03C9
        | 0x0410..=0x044F
        | 0x2010
        | 0x2013..=0x2015
        | 0x2018..=0x2023
        | 0x2190..=0x2199
        | 0x2500..=0x257F
        | 0x3001..=0x3003
        | 0x3008..=0x3011
        | 0x3041..=0x3096
        | 0x30A1..=0x30FE
        | 0x4E00..=0x9FFF
        | 0xAC00..=0xD7A3
        | 0x1F300..=0x1F64F)
}

/// Does the normalised copy differ from the original at this character?
fn changes_under_normalization(c: char) -> bool {
    if c.is_ascii() {
        return classify(c).is_some();
    }
    if surely_nfkc_stable(c) {
        return false;
    }
    classify(c).is_some() || is_nfkc_quick(std::iter::once(c)) != IsNormalized::Yes
}

/// The normalised copy of the lines that normalisation changes, each with `radius` lines of
/// unchanged context (so a key id and its secret on the next line are read together), and a map
/// of every byte back to the original.
pub(super) struct Normalized {
    pub text: String,
    /// (offset in `text`, offset in the original, length, identity) for each piece; identity
    /// pieces map byte for byte, the others (one normalised character) to one original character.
    pieces: Vec<(usize, usize, usize, bool)>,
    /// The changed lines, in offsets of `text`: the only places the second pass looks.
    pub dirty: Vec<Range<usize>>,
}

impl Normalized {
    fn piece(&self, n: usize) -> (usize, usize, usize, bool) {
        let i = self.pieces.partition_point(|p| p.0 <= n).saturating_sub(1);
        self.pieces[i]
    }

    /// The original byte span of a span of the normalised text (both ends on char boundaries).
    pub(super) fn original_span(&self, start: usize, end: usize) -> (usize, usize) {
        let (ns, os, _, identity) = self.piece(start);
        let s = if identity { os + (start - ns) } else { os };
        let end = end.max(start + 1);
        let (ns, os, len, identity) = self.piece(end - 1);
        let e = if identity { os + (end - ns) } else { os + len };
        (s, e)
    }

    fn push_identity(&mut self, original: &str, from: usize, to: usize) {
        if from < to {
            self.pieces.push((self.text.len(), from, to - from, true));
            self.text.push_str(&original[from..to]);
        }
    }
}

/// Builds the normalised copy, or `None` when nothing changes.
pub(super) fn normalize(text: &str, changed: &[usize], radius: usize) -> Option<Normalized> {
    if changed.is_empty() {
        return None;
    }
    // Windows of lines around each changed line, merged.
    let mut windows: Vec<(usize, usize)> = Vec::new();
    for &line in changed {
        let mut s = line;
        for _ in 0..radius {
            if s == 0 {
                break;
            }
            s = text[..s - 1].rfind('\n').map_or(0, |j| j + 1);
        }
        let mut e = text[line..].find('\n').map_or(text.len(), |j| line + j);
        for _ in 0..radius {
            if e >= text.len() {
                break;
            }
            e = text[e + 1..].find('\n').map_or(text.len(), |j| e + 1 + j);
        }
        match windows.last_mut() {
            Some(w) if s <= w.1 + 1 => w.1 = w.1.max(e),
            _ => windows.push((s, e)),
        }
    }
    let mut n = Normalized {
        text: String::new(),
        pieces: Vec::new(),
        dirty: Vec::new(),
    };
    let mut next_changed = changed.iter().copied().peekable();
    for (ws, we) in windows {
        if !n.text.is_empty() {
            // Windows are separated by a line break that maps to the end of the previous one.
            n.pieces.push((n.text.len(), ws.saturating_sub(1), 1, true));
            n.text.push('\n');
        }
        let mut line = ws;
        while line <= we {
            let line_end = text[line..we].find('\n').map_or(we, |j| line + j);
            if next_changed.peek() == Some(&line) {
                next_changed.next();
                let dirty_start = n.text.len();
                let mut run = line;
                for (k, c) in text[line..line_end].char_indices() {
                    let at = line + k;
                    if !changes_under_normalization(c) {
                        continue;
                    }
                    n.push_identity(text, run, at);
                    run = at + c.len_utf8();
                    if classify(c).is_some() {
                        continue;
                    }
                    for d in std::iter::once(c).nfkc() {
                        n.pieces.push((n.text.len(), at, c.len_utf8(), false));
                        n.text.push(d);
                    }
                }
                n.push_identity(text, run, line_end);
                n.dirty.push(dirty_start..n.text.len());
            } else {
                n.push_identity(text, line, line_end);
            }
            if line_end >= we {
                break;
            }
            n.push_identity(text, line_end, line_end + 1);
            line = line_end + 1;
        }
    }
    Some(n)
}
