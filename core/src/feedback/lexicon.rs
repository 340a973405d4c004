//! The checker's data: polarity cues (English, Chinese, Japanese, Korean, German, Spanish,
//! French, Portuguese, Italian, Dutch, Polish, Swedish, and Turkish words and negative verb
//! suffixes), stop words, the domain lexicon of concepts and the scope
//! qualifiers. Everything here is a table; [`Lexicon::get`] compiles it once.

use std::collections::HashSet;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::{Regex, RegexSet, RegexSetBuilder};

use super::analyze::stem;

/// What a directive says about the thing it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Pol {
    /// Do it / use it (always, must, use, prefer, the bare imperative).
    Pos,
    /// Don't (never, avoid, stop, skip, no longer, forbidden).
    Neg,
    /// It is allowed (is fine, ok to, may, can).
    Permit,
    /// It is not required (no need to, optional).
    Optional,
}

impl Pol {
    /// The polarity after "instead of", "rather than", "not", "without".
    pub(crate) fn flipped(self) -> Pol {
        match self {
            Pol::Pos | Pol::Permit => Pol::Neg,
            Pol::Neg | Pol::Optional => Pol::Pos,
        }
    }

    /// Whether two directives on the same thing oppose each other.
    pub(crate) fn opposes(self, other: Pol) -> bool {
        matches!(
            (self, other),
            (Pol::Pos, Pol::Neg)
                | (Pol::Neg, Pol::Pos)
                | (Pol::Permit, Pol::Neg)
                | (Pol::Neg, Pol::Permit)
                | (Pol::Pos, Pol::Optional)
                | (Pol::Optional, Pol::Pos)
        )
    }

    /// Use or allow.
    pub(crate) fn accepts(self) -> bool {
        matches!(self, Pol::Pos | Pol::Permit)
    }
}

/// Which words a polarity cue governs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    /// The words after it ("must hit a real database"); words before it are the topic.
    Pre,
    /// The words before it ("mocks are fine").
    Post,
    /// Both (languages whose word order varies, such as German, and "only").
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cue {
    /// A polarity cue. A weak positive cue ("use", "prefer") does not lift a negation already in
    /// force ("don't use"); a strong one ("always", "must") does.
    Polar { pol: Pol, dir: Dir, strong: bool },
    /// "instead of", "rather than", "not", "without": what follows has the opposite polarity.
    Flip,
    /// "over", only after "prefer".
    FlipAfterPrefer,
    /// "but", "however": a new part of the sentence with its own polarity.
    But,
}

const fn polar(pol: Pol, dir: Dir, strong: bool) -> Cue {
    Cue::Polar { pol, dir, strong }
}

const PRE_POS: Cue = polar(Pol::Pos, Dir::Pre, true);
const PRE_POS_WEAK: Cue = polar(Pol::Pos, Dir::Pre, false);
const PRE_NEG: Cue = polar(Pol::Neg, Dir::Pre, true);
const PRE_PERMIT: Cue = polar(Pol::Permit, Dir::Pre, false);
const PRE_OPT: Cue = polar(Pol::Optional, Dir::Pre, true);
const POST_POS: Cue = polar(Pol::Pos, Dir::Post, true);
const POST_NEG: Cue = polar(Pol::Neg, Dir::Post, true);
const POST_PERMIT: Cue = polar(Pol::Permit, Dir::Post, true);
const POST_OPT: Cue = polar(Pol::Optional, Dir::Post, true);
const BOTH_POS: Cue = polar(Pol::Pos, Dir::Both, true);
const BOTH_POS_WEAK: Cue = polar(Pol::Pos, Dir::Both, false);
const BOTH_NEG: Cue = polar(Pol::Neg, Dir::Both, true);
const BOTH_PERMIT: Cue = polar(Pol::Permit, Dir::Both, false);
const BOTH_OPT: Cue = polar(Pol::Optional, Dir::Both, true);

/// Polarity cues, matched leftmost-longest on the lower-cased text (so "is not allowed" wins over
/// "is not", and "no need to" over "no"). Latin-script cues must stand as whole words.
const CUES: &[(&str, Cue)] = &[
    // English: do.
    ("always", PRE_POS),
    ("must", PRE_POS),
    ("must always", PRE_POS),
    ("should", PRE_POS),
    ("should always", PRE_POS),
    ("shall", PRE_POS),
    ("need to", PRE_POS),
    ("needs to", PRE_POS),
    ("have to", PRE_POS),
    ("has to", PRE_POS),
    ("make sure", PRE_POS),
    ("ensure", PRE_POS),
    ("be sure to", PRE_POS),
    ("remember to", PRE_POS),
    ("required to", PRE_POS),
    ("only", BOTH_POS),
    ("use", PRE_POS_WEAK),
    ("uses", PRE_POS_WEAK),
    ("using", PRE_POS_WEAK),
    ("prefer", PRE_POS_WEAK),
    ("prefers", PRE_POS_WEAK),
    ("preferably", PRE_POS_WEAK),
    ("keep", PRE_POS_WEAK),
    ("keeps", PRE_POS_WEAK),
    ("stick to", PRE_POS_WEAK),
    ("stick with", PRE_POS_WEAK),
    ("switch to", PRE_POS_WEAK),
    ("go with", PRE_POS_WEAK),
    ("require", PRE_POS_WEAK),
    ("requires", PRE_POS_WEAK),
    ("enable", PRE_POS_WEAK),
    ("turn on", PRE_POS_WEAK),
    ("opt for", PRE_POS_WEAK),
    ("default to", PRE_POS_WEAK),
    ("favor", PRE_POS_WEAK),
    ("favour", PRE_POS_WEAK),
    // English: don't.
    ("never", PRE_NEG),
    ("don't", PRE_NEG),
    ("dont", PRE_NEG),
    ("do not", PRE_NEG),
    ("does not", PRE_NEG),
    ("doesn't", PRE_NEG),
    ("did not", PRE_NEG),
    ("must not", PRE_NEG),
    ("mustn't", PRE_NEG),
    ("must never", PRE_NEG),
    ("should not", PRE_NEG),
    ("shouldn't", PRE_NEG),
    ("should never", PRE_NEG),
    ("shall not", PRE_NEG),
    ("cannot", PRE_NEG),
    ("can't", PRE_NEG),
    ("can not", PRE_NEG),
    ("won't", PRE_NEG),
    ("will not", PRE_NEG),
    ("avoid", PRE_NEG),
    ("avoids", PRE_NEG),
    ("avoiding", PRE_NEG),
    ("stop", PRE_NEG),
    ("stops", PRE_NEG),
    ("skip", PRE_NEG),
    ("skips", PRE_NEG),
    ("skipping", PRE_NEG),
    ("no longer", PRE_NEG),
    // What was given up: "we dropped Pact", "the MLflow server was shut down".
    ("dropped", BOTH_NEG),
    ("was dropped", POST_NEG),
    ("were dropped", POST_NEG),
    ("retired", BOTH_NEG),
    ("was retired", POST_NEG),
    ("shut down", BOTH_NEG),
    ("was shut down", POST_NEG),
    ("switched off", BOTH_NEG),
    ("was switched off", POST_NEG),
    ("phased out", BOTH_NEG),
    ("was removed", POST_NEG),
    ("were removed", POST_NEG),
    ("was replaced", POST_NEG),
    ("were replaced", POST_NEG),
    ("has been replaced", POST_NEG),
    ("were retired", POST_NEG),
    ("were deprecated", POST_NEG),
    ("was uninstalled", POST_NEG),
    ("were uninstalled", POST_NEG),
    ("was cancelled", POST_NEG),
    ("was canceled", POST_NEG),
    ("is on the deny list", POST_NEG),
    ("are on the deny list", POST_NEG),
    ("is on the denylist", POST_NEG),
    ("are on the denylist", POST_NEG),
    ("is on the blocklist", POST_NEG),
    ("are on the blocklist", POST_NEG),
    ("is denylisted", POST_NEG),
    ("is blocklisted", POST_NEG),
    ("was deprecated", POST_NEG),
    ("has been deprecated", POST_NEG),
    ("was superseded", POST_NEG),
    ("is superseded", POST_NEG),
    ("was archived", POST_NEG),
    ("is archived", POST_NEG),
    ("is obsolete", POST_NEG),
    ("are obsolete", POST_NEG),
    ("got rid of", PRE_NEG),
    ("moved off", PRE_NEG),
    ("moved away from", PRE_NEG),
    ("migrated away from", PRE_NEG),
    ("decommissioned", BOTH_NEG),
    ("abandoned", BOTH_NEG),
    ("refrain from", PRE_NEG),
    ("not allowed to", PRE_NEG),
    ("forbidden to", PRE_NEG),
    ("is not", PRE_NEG),
    ("are not", PRE_NEG),
    ("isn't", PRE_NEG),
    ("aren't", PRE_NEG),
    ("no", PRE_NEG),
    ("nor", PRE_NEG),
    ("disable", PRE_NEG),
    ("disables", PRE_NEG),
    ("turn off", PRE_NEG),
    ("remove", PRE_NEG),
    ("removes", PRE_NEG),
    ("delete", PRE_NEG),
    ("drop", PRE_NEG),
    ("ban", PRE_NEG),
    ("forbid", PRE_NEG),
    ("prohibit", PRE_NEG),
    ("get rid of", PRE_NEG),
    ("ditch", PRE_NEG),
    ("be removed", POST_NEG),
    ("be deleted", POST_NEG),
    ("be dropped", POST_NEG),
    ("omit", PRE_NEG),
    ("omits", PRE_NEG),
    ("leave out", PRE_NEG),
    ("steer clear of", PRE_NEG),
    ("do away with", PRE_NEG),
    // English: may.
    ("may", PRE_PERMIT),
    ("can", PRE_PERMIT),
    ("ok to", PRE_PERMIT),
    ("okay to", PRE_PERMIT),
    ("fine to", PRE_PERMIT),
    ("it's fine to", PRE_PERMIT),
    ("it is fine to", PRE_PERMIT),
    ("it's ok to", PRE_PERMIT),
    ("it's okay to", PRE_PERMIT),
    ("it is ok to", PRE_PERMIT),
    ("allowed to", PRE_PERMIT),
    ("free to", PRE_PERMIT),
    ("feel free to", PRE_PERMIT),
    ("acceptable to", PRE_PERMIT),
    ("permitted to", PRE_PERMIT),
    // English: need not.
    ("no need to", PRE_OPT),
    ("no need for", PRE_OPT),
    ("don't need to", PRE_OPT),
    ("do not need to", PRE_OPT),
    ("doesn't need to", PRE_OPT),
    ("does not need to", PRE_OPT),
    ("don't have to", PRE_OPT),
    ("do not have to", PRE_OPT),
    ("doesn't have to", PRE_OPT),
    ("needn't", PRE_OPT),
    ("not necessary to", PRE_OPT),
    ("not required to", PRE_OPT),
    ("don't bother", PRE_OPT),
    ("don't bother with", PRE_OPT),
    ("do not bother with", PRE_OPT),
    // English: predicates after their subject ("X is fine").
    ("is fine", POST_PERMIT),
    ("are fine", POST_PERMIT),
    ("is ok", POST_PERMIT),
    ("are ok", POST_PERMIT),
    ("is okay", POST_PERMIT),
    ("are okay", POST_PERMIT),
    ("is acceptable", POST_PERMIT),
    ("are acceptable", POST_PERMIT),
    ("is allowed", POST_PERMIT),
    ("are allowed", POST_PERMIT),
    ("is permitted", POST_PERMIT),
    ("are permitted", POST_PERMIT),
    ("is alright", POST_PERMIT),
    ("is all right", POST_PERMIT),
    ("is good enough", POST_PERMIT),
    ("are good enough", POST_PERMIT),
    ("is welcome", POST_PERMIT),
    ("are welcome", POST_PERMIT),
    ("is tolerated", POST_PERMIT),
    ("are tolerated", POST_PERMIT),
    ("is no problem", POST_PERMIT),
    ("is not a problem", POST_PERMIT),
    ("is required", POST_POS),
    ("must pass", POST_POS),
    ("should pass", POST_POS),
    ("must succeed", POST_POS),
    ("must be run", POST_POS),
    ("must be used", POST_POS),
    ("should be used", POST_POS),
    ("must be enabled", POST_POS),
    ("must be green", POST_POS),
    ("are required", POST_POS),
    ("is mandatory", POST_POS),
    ("are mandatory", POST_POS),
    ("is preferred", POST_POS),
    ("are preferred", POST_POS),
    ("is encouraged", POST_POS),
    ("are encouraged", POST_POS),
    ("is a must", POST_POS),
    ("is expected", POST_POS),
    ("are expected", POST_POS),
    ("is the default", POST_POS),
    ("is the standard", POST_POS),
    ("is used", POST_POS),
    ("are used", POST_POS),
    ("is our", POST_POS),
    ("are our", POST_POS),
    ("is forbidden", POST_NEG),
    ("are forbidden", POST_NEG),
    ("is banned", POST_NEG),
    ("are banned", POST_NEG),
    ("is not allowed", POST_NEG),
    ("are not allowed", POST_NEG),
    ("is rejected", POST_NEG),
    ("are rejected", POST_NEG),
    ("gets rejected", POST_NEG),
    ("get rejected", POST_NEG),
    ("is not accepted", POST_NEG),
    ("are not accepted", POST_NEG),
    ("isn't allowed", POST_NEG),
    ("aren't allowed", POST_NEG),
    ("is prohibited", POST_NEG),
    ("are prohibited", POST_NEG),
    ("is discouraged", POST_NEG),
    ("are discouraged", POST_NEG),
    ("is deprecated", POST_NEG),
    ("are deprecated", POST_NEG),
    ("should be avoided", POST_NEG),
    ("must be avoided", POST_NEG),
    ("is to be avoided", POST_NEG),
    ("is off-limits", POST_NEG),
    ("are off-limits", POST_NEG),
    ("is off limits", POST_NEG),
    ("is a no-go", POST_NEG),
    ("is not ok", POST_NEG),
    ("is not okay", POST_NEG),
    ("is not fine", POST_NEG),
    ("isn't ok", POST_NEG),
    ("isn't okay", POST_NEG),
    ("isn't fine", POST_NEG),
    ("is not acceptable", POST_NEG),
    ("isn't acceptable", POST_NEG),
    ("are not acceptable", POST_NEG),
    ("is unacceptable", POST_NEG),
    ("are unacceptable", POST_NEG),
    ("is no longer used", POST_NEG),
    ("are no longer used", POST_NEG),
    ("is not used", POST_NEG),
    ("are not used", POST_NEG),
    ("is a bad idea", POST_NEG),
    ("is not welcome", POST_NEG),
    ("are not welcome", POST_NEG),
    ("is optional", POST_OPT),
    ("are optional", POST_OPT),
    ("is not needed", POST_OPT),
    ("are not needed", POST_OPT),
    ("isn't needed", POST_OPT),
    ("is unnecessary", POST_OPT),
    ("are unnecessary", POST_OPT),
    ("is not necessary", POST_OPT),
    ("isn't necessary", POST_OPT),
    ("are not necessary", POST_OPT),
    ("is not required", POST_OPT),
    ("isn't required", POST_OPT),
    ("are not required", POST_OPT),
    ("aren't required", POST_OPT),
    // English: switches and breaks.
    ("instead of", Cue::Flip),
    ("rather than", Cue::Flip),
    ("in place of", Cue::Flip),
    ("in favor of", Cue::Flip),
    ("in favour of", Cue::Flip),
    ("as opposed to", Cue::Flip),
    ("not", Cue::Flip),
    ("without", Cue::Flip),
    ("unless", Cue::Flip),
    ("except", Cue::Flip),
    ("over", Cue::FlipAfterPrefer),
    ("but", Cue::But),
    ("however", Cue::But),
    ("although", Cue::But),
    ("though", Cue::But),
    ("whereas", Cue::But),
    // Chinese.
    ("必须", PRE_POS),
    ("务必", PRE_POS),
    ("一定要", PRE_POS),
    ("总是", PRE_POS),
    ("始终", PRE_POS),
    ("永远要", PRE_POS),
    ("应该", PRE_POS),
    ("应当", PRE_POS),
    ("需要", PRE_POS),
    ("一律", PRE_POS),
    ("只能", PRE_POS),
    ("只用", PRE_POS),
    ("统一", PRE_POS),
    ("使用", PRE_POS_WEAK),
    ("采用", PRE_POS_WEAK),
    ("改用", PRE_POS_WEAK),
    ("不要", PRE_NEG),
    ("不能", PRE_NEG),
    ("不得", PRE_NEG),
    ("不应", PRE_NEG),
    ("不应该", PRE_NEG),
    ("不应当", PRE_NEG),
    ("不可以", PRE_NEG),
    ("不允许", PRE_NEG),
    ("禁止", PRE_NEG),
    ("避免", PRE_NEG),
    ("别", PRE_NEG),
    ("勿", PRE_NEG),
    ("切勿", PRE_NEG),
    ("请勿", PRE_NEG),
    ("绝不", PRE_NEG),
    ("决不", PRE_NEG),
    ("永远不要", PRE_NEG),
    ("从不", PRE_NEG),
    ("不许", PRE_NEG),
    ("不准", PRE_NEG),
    ("停止", PRE_NEG),
    ("不再", PRE_NEG),
    ("废弃", BOTH_NEG),
    ("弃用", BOTH_NEG),
    ("下线", BOTH_NEG),
    ("严禁", PRE_NEG),
    ("不用", PRE_OPT),
    ("不需要", PRE_OPT),
    ("无需", PRE_OPT),
    ("不必", PRE_OPT),
    ("没必要", PRE_OPT),
    ("可以", PRE_PERMIT),
    ("允许", PRE_PERMIT),
    ("没问题", POST_PERMIT),
    ("没关系", POST_PERMIT),
    ("也行", POST_PERMIT),
    ("也可以", POST_PERMIT),
    ("无所谓", POST_PERMIT),
    ("而不是", Cue::Flip),
    ("而非", Cue::Flip),
    ("不是", Cue::Flip),
    ("代替", Cue::Flip),
    ("替代", Cue::Flip),
    ("取代", Cue::Flip),
    ("但是", Cue::But),
    ("但", Cue::But),
    ("不过", Cue::But),
    ("然而", Cue::But),
    // Japanese: the predicate comes last.
    ("必ず", PRE_POS),
    ("常に", PRE_POS),
    ("いつも", PRE_POS),
    ("すること", POST_POS),
    ("べき", POST_POS),
    ("使う", POST_POS),
    ("使います", POST_POS),
    ("使うこと", POST_POS),
    ("使用する", POST_POS),
    ("使用します", POST_POS),
    ("にする", POST_POS),
    ("にします", POST_POS),
    ("必須", POST_POS),
    ("推奨", POST_POS),
    ("しない", POST_NEG),
    ("しないで", POST_NEG),
    ("しないこと", POST_NEG),
    ("しません", POST_NEG),
    ("するな", POST_NEG),
    ("使わない", POST_NEG),
    ("使わないで", POST_NEG),
    ("使わないこと", POST_NEG),
    ("廃止", BOTH_NEG),
    ("非推奨", BOTH_NEG),
    ("使用しない", POST_NEG),
    ("避ける", POST_NEG),
    ("避けて", POST_NEG),
    ("禁止", POST_NEG),
    ("ダメ", POST_NEG),
    ("だめ", POST_NEG),
    ("いけない", POST_NEG),
    ("べきではない", POST_NEG),
    ("べきでない", POST_NEG),
    ("やめる", POST_NEG),
    ("やめて", POST_NEG),
    ("控える", POST_NEG),
    ("ない", POST_NEG),
    ("ません", POST_NEG),
    ("てもいい", POST_PERMIT),
    ("てもよい", POST_PERMIT),
    ("ても良い", POST_PERMIT),
    ("ても大丈夫", POST_PERMIT),
    ("でもいい", POST_PERMIT),
    ("構わない", POST_PERMIT),
    ("かまわない", POST_PERMIT),
    ("大丈夫", POST_PERMIT),
    ("問題ない", POST_PERMIT),
    ("必要ない", POST_OPT),
    ("必要はない", POST_OPT),
    ("ではなく", Cue::Flip),
    ("じゃなく", Cue::Flip),
    ("でなく", Cue::Flip),
    ("の代わりに", Cue::Flip),
    ("しかし", Cue::But),
    ("ただし", Cue::But),
    ("けど", Cue::But),
    // Korean.
    ("항상", PRE_POS),
    ("반드시", PRE_POS),
    ("꼭", PRE_POS),
    ("사용하세요", POST_POS),
    ("하세요", POST_POS),
    ("해야 합니다", POST_POS),
    ("마세요", POST_NEG),
    ("말 것", POST_NEG),
    ("금지", POST_NEG),
    ("폐기", BOTH_NEG),
    ("지원 중단", BOTH_NEG),
    ("하지 않", POST_NEG),
    ("않습니다", POST_NEG),
    ("안 됩니다", POST_NEG),
    ("해도 됩니다", POST_PERMIT),
    ("괜찮습니다", POST_PERMIT),
    ("대신", Cue::Flip),
    ("하지만", Cue::But),
    ("그러나", Cue::But),
    // German: the verb moves, so cues govern the whole part of the sentence.
    ("immer", BOTH_POS),
    ("stets", BOTH_POS),
    ("muss", BOTH_POS),
    ("müssen", BOTH_POS),
    ("musst", BOTH_POS),
    ("soll", BOTH_POS),
    ("sollen", BOTH_POS),
    ("sollte", BOTH_POS),
    ("sollten", BOTH_POS),
    ("ausschließlich", BOTH_POS),
    ("nur", BOTH_POS),
    ("verwende", BOTH_POS_WEAK),
    ("verwenden", BOTH_POS_WEAK),
    ("verwendet", BOTH_POS_WEAK),
    ("benutze", BOTH_POS_WEAK),
    ("benutzen", BOTH_POS_WEAK),
    ("nutze", BOTH_POS_WEAK),
    ("nutzen", BOTH_POS_WEAK),
    ("nutzt", BOTH_POS_WEAK),
    ("nie", BOTH_NEG),
    ("niemals", BOTH_NEG),
    ("nicht", BOTH_NEG),
    ("nicht mehr", BOTH_NEG),
    ("kein", BOTH_NEG),
    ("keine", BOTH_NEG),
    ("keinen", BOTH_NEG),
    ("keiner", BOTH_NEG),
    ("keinesfalls", BOTH_NEG),
    ("auf keinen fall", BOTH_NEG),
    ("vermeide", BOTH_NEG),
    ("vermeiden", BOTH_NEG),
    ("verboten", BOTH_NEG),
    ("untersagt", BOTH_NEG),
    ("abgelöst", BOTH_NEG),
    ("abgeschafft", BOTH_NEG),
    ("abgeschaltet", BOTH_NEG),
    ("veraltet", BOTH_NEG),
    ("wurde entfernt", POST_NEG),
    ("wurden entfernt", POST_NEG),
    ("darf", BOTH_PERMIT),
    ("dürfen", BOTH_PERMIT),
    ("erlaubt", BOTH_PERMIT),
    ("ist ok", BOTH_PERMIT),
    ("ist okay", BOTH_PERMIT),
    ("in ordnung", BOTH_PERMIT),
    ("nicht nötig", BOTH_OPT),
    ("nicht notwendig", BOTH_OPT),
    ("nicht erforderlich", BOTH_OPT),
    ("muss nicht", BOTH_OPT),
    ("müssen nicht", BOTH_OPT),
    ("brauchst nicht", BOTH_OPT),
    ("braucht nicht", BOTH_OPT),
    ("darf nicht", BOTH_NEG),
    ("dürfen nicht", BOTH_NEG),
    ("statt", Cue::Flip),
    ("anstatt", Cue::Flip),
    ("anstelle", Cue::Flip),
    ("sondern", Cue::Flip),
    ("aber", Cue::But),
    ("jedoch", Cue::But),
    // Spanish.
    ("siempre", PRE_POS),
    ("debe", PRE_POS),
    ("deben", PRE_POS),
    ("debes", PRE_POS),
    ("debemos", PRE_POS),
    ("hay que", PRE_POS),
    ("tienes que", PRE_POS),
    ("tiene que", PRE_POS),
    ("tenemos que", PRE_POS),
    ("solo", BOTH_POS),
    ("sólo", BOTH_POS),
    ("únicamente", BOTH_POS),
    ("usa", PRE_POS_WEAK),
    ("usar", PRE_POS_WEAK),
    ("usamos", PRE_POS_WEAK),
    ("utiliza", PRE_POS_WEAK),
    ("utilizar", PRE_POS_WEAK),
    ("utilizamos", PRE_POS_WEAK),
    ("nunca", PRE_NEG),
    ("jamás", PRE_NEG),
    ("ningún", PRE_NEG),
    ("ninguna", PRE_NEG),
    ("ninguno", PRE_NEG),
    ("evita", PRE_NEG),
    ("evitar", PRE_NEG),
    ("está prohibido", POST_NEG),
    ("está prohibida", POST_NEG),
    ("están prohibidos", POST_NEG),
    ("están prohibidas", POST_NEG),
    ("fue eliminado", POST_NEG),
    ("fue reemplazado", POST_NEG),
    ("está obsoleto", POST_NEG),
    ("fue reemplazado", POST_NEG),
    ("fue retirado", POST_NEG),
    ("prohibido", PRE_NEG),
    ("puedes", PRE_PERMIT),
    ("se puede", PRE_PERMIT),
    ("está bien", POST_PERMIT),
    ("es aceptable", POST_PERMIT),
    ("no hace falta", PRE_OPT),
    ("no es necesario", PRE_OPT),
    ("en lugar de", Cue::Flip),
    ("en vez de", Cue::Flip),
    ("sino", Cue::Flip),
    ("pero", Cue::But),
    ("aunque", Cue::But),
    // French.
    ("toujours", PRE_POS),
    ("doit", PRE_POS),
    ("doivent", PRE_POS),
    ("il faut", PRE_POS),
    ("uniquement", BOTH_POS),
    ("utilise", PRE_POS_WEAK),
    ("utiliser", PRE_POS_WEAK),
    ("utilisez", PRE_POS_WEAK),
    ("jamais", PRE_NEG),
    ("aucun", PRE_NEG),
    ("aucune", PRE_NEG),
    ("ne", PRE_NEG),
    ("pas", BOTH_NEG),
    ("pas de", PRE_NEG),
    ("évite", PRE_NEG),
    ("éviter", PRE_NEG),
    ("évitez", PRE_NEG),
    ("est interdit", POST_NEG),
    ("est interdite", POST_NEG),
    ("sont interdits", POST_NEG),
    ("sont interdites", POST_NEG),
    ("sont obsolètes", POST_NEG),
    ("a été remplacée", POST_NEG),
    ("ont été remplacés", POST_NEG),
    ("a été supprimée", POST_NEG),
    ("ont été supprimés", POST_NEG),
    ("n'est plus utilisé", POST_NEG),
    ("ne sont plus utilisés", POST_NEG),
    ("est obsolète", POST_NEG),
    ("a été remplacé", POST_NEG),
    ("a été supprimé", POST_NEG),
    ("est abandonné", POST_NEG),
    ("peut", PRE_PERMIT),
    ("vous pouvez", PRE_PERMIT),
    ("est acceptable", POST_PERMIT),
    ("au lieu de", Cue::Flip),
    ("plutôt que", Cue::Flip),
    ("à la place de", Cue::Flip),
    ("mais", Cue::But),
    // Portuguese.
    ("sempre", PRE_POS),
    ("deve", PRE_POS),
    ("devem", PRE_POS),
    ("temos que", PRE_POS),
    ("não", PRE_NEG),
    ("nem", PRE_NEG),
    ("nenhum", PRE_NEG),
    ("nenhuma", PRE_NEG),
    ("evite", PRE_NEG),
    ("é proibido", POST_NEG),
    ("é proibida", POST_NEG),
    ("são proibidos", POST_NEG),
    ("foi removida", POST_NEG),
    ("foram removidos", POST_NEG),
    ("foi substituída", POST_NEG),
    ("foi substituído", POST_NEG),
    ("foi descontinuado", POST_NEG),
    ("foi removido", POST_NEG),
    ("proibido", PRE_NEG),
    ("pode", PRE_PERMIT),
    ("podem", PRE_PERMIT),
    ("não precisa", PRE_OPT),
    ("em vez de", Cue::Flip),
    ("ao invés de", Cue::Flip),
    ("mas", Cue::But),
    // Italian.
    ("devono", PRE_POS),
    ("dobbiamo", PRE_POS),
    ("bisogna", PRE_POS),
    ("occorre", PRE_POS),
    ("è obbligatorio", PRE_POS),
    ("obbligatorio", BOTH_POS),
    ("soltanto", BOTH_POS),
    ("usare", PRE_POS_WEAK),
    ("usiamo", PRE_POS_WEAK),
    ("utilizza", PRE_POS_WEAK),
    ("utilizziamo", PRE_POS_WEAK),
    ("non", PRE_NEG),
    ("mai", PRE_NEG),
    ("niente", PRE_NEG),
    ("nessun", PRE_NEG),
    ("nessuna", PRE_NEG),
    ("nessuno", PRE_NEG),
    ("evitare", PRE_NEG),
    ("evitiamo", PRE_NEG),
    ("è vietato", PRE_NEG),
    ("è stato sostituito", POST_NEG),
    ("è deprecato", POST_NEG),
    ("dismesso", BOTH_NEG),
    ("vietato", BOTH_NEG),
    ("vietata", BOTH_NEG),
    ("vietati", BOTH_NEG),
    ("vietate", BOTH_NEG),
    ("è stato rimosso", POST_NEG),
    ("è stata rimossa", POST_NEG),
    ("sono stati rimossi", POST_NEG),
    ("è stata sostituita", POST_NEG),
    ("può", PRE_PERMIT),
    ("possono", PRE_PERMIT),
    ("si può", PRE_PERMIT),
    ("è consentito", PRE_PERMIT),
    ("va bene", POST_PERMIT),
    ("non serve", PRE_OPT),
    ("non è necessario", PRE_OPT),
    ("non occorre", PRE_OPT),
    ("invece di", Cue::Flip),
    ("anziché", Cue::Flip),
    ("al posto di", Cue::Flip),
    ("però", Cue::But),
    // Dutch.
    ("altijd", PRE_POS),
    ("moet", PRE_POS),
    ("moeten", PRE_POS),
    ("verplicht", BOTH_POS),
    ("alleen", BOTH_POS),
    ("gebruik", PRE_POS_WEAK),
    ("gebruiken", PRE_POS_WEAK),
    ("gebruikt", PRE_POS_WEAK),
    ("nooit", PRE_NEG),
    ("niet", BOTH_NEG),
    ("geen", PRE_NEG),
    ("niets", PRE_NEG),
    ("vermijd", PRE_NEG),
    ("verboden", BOTH_NEG),
    ("uitgefaseerd", BOTH_NEG),
    ("is vervangen", POST_NEG),
    ("zijn vervangen", POST_NEG),
    ("is verwijderd", POST_NEG),
    ("zijn verwijderd", POST_NEG),
    ("afgeschaft", BOTH_NEG),
    ("mag niet", BOTH_NEG),
    ("mogen niet", BOTH_NEG),
    ("mag", PRE_PERMIT),
    ("mogen", PRE_PERMIT),
    ("is prima", POST_PERMIT),
    ("is toegestaan", POST_PERMIT),
    ("hoeft niet", BOTH_OPT),
    ("hoeven niet", BOTH_OPT),
    ("niet nodig", BOTH_OPT),
    ("in plaats van", Cue::Flip),
    ("zonder", Cue::Flip),
    ("maar", Cue::But),
    // Polish.
    ("zawsze", PRE_POS),
    ("musi", PRE_POS),
    ("muszą", PRE_POS),
    ("musimy", PRE_POS),
    ("należy", PRE_POS),
    ("trzeba", PRE_POS),
    ("wymagane", BOTH_POS),
    ("tylko", BOTH_POS),
    ("używamy", PRE_POS_WEAK),
    ("używaj", PRE_POS_WEAK),
    ("używać", PRE_POS_WEAK),
    ("nigdy", PRE_NEG),
    ("unikaj", PRE_NEG),
    ("zakaz", PRE_NEG),
    ("zabronione", BOTH_NEG),
    ("zakazane", BOTH_NEG),
    ("został usunięty", POST_NEG),
    ("zostało usunięte", POST_NEG),
    ("zostały usunięte", POST_NEG),
    ("wycofany", BOTH_NEG),
    ("wycofane", BOTH_NEG),
    ("wycofaliśmy", PRE_NEG),
    ("nie wolno", PRE_NEG),
    ("żaden", PRE_NEG),
    ("żadna", PRE_NEG),
    ("żadne", PRE_NEG),
    ("żadnych", PRE_NEG),
    ("można", PRE_PERMIT),
    ("wolno", PRE_PERMIT),
    ("mogą", PRE_PERMIT),
    ("jest w porządku", POST_PERMIT),
    ("nie trzeba", PRE_OPT),
    ("nie musi", PRE_OPT),
    ("nie muszą", PRE_OPT),
    ("nie musimy", PRE_OPT),
    ("zamiast", Cue::Flip),
    ("bez", Cue::Flip),
    ("ale", Cue::But),
    // Swedish.
    ("alltid", PRE_POS),
    ("måste", PRE_POS),
    ("ska", PRE_POS),
    ("skall", PRE_POS),
    ("endast", BOTH_POS),
    ("bara", BOTH_POS),
    ("krävs", BOTH_POS),
    ("använd", PRE_POS_WEAK),
    ("använder", PRE_POS_WEAK),
    ("aldrig", PRE_NEG),
    ("inte", BOTH_NEG),
    ("ingen", PRE_NEG),
    ("inga", PRE_NEG),
    ("inget", PRE_NEG),
    ("undvik", PRE_NEG),
    ("förbjudet", BOTH_NEG),
    ("avvecklat", BOTH_NEG),
    ("avvecklad", BOTH_NEG),
    ("avvecklade", BOTH_NEG),
    ("har ersatts", POST_NEG),
    ("togs bort", POST_NEG),
    ("har tagits bort", POST_NEG),
    ("förbjudna", BOTH_NEG),
    ("får inte", BOTH_NEG),
    ("får", PRE_PERMIT),
    ("går bra", POST_PERMIT),
    ("är tillåtet", POST_PERMIT),
    ("behöver inte", BOTH_OPT),
    ("inte nödvändigt", BOTH_OPT),
    ("istället för", Cue::Flip),
    ("i stället för", Cue::Flip),
    ("utan", Cue::Flip),
    ("men", Cue::But),
    // Turkish (negation is mostly a verb suffix: see `TURKISH_NEGATIVE`).
    ("her zaman", PRE_POS),
    ("mutlaka", PRE_POS),
    ("zorunlu", BOTH_POS),
    ("zorunludur", POST_POS),
    ("gerekir", POST_POS),
    ("gerekiyor", POST_POS),
    ("sadece", BOTH_POS),
    ("asla", PRE_NEG),
    ("hiçbir", PRE_NEG),
    ("yasak", POST_NEG),
    ("yasaktır", POST_NEG),
    ("kaldırıldı", POST_NEG),
    ("terk edildi", POST_NEG),
    ("değil", POST_NEG),
    ("olabilir", POST_PERMIT),
    ("serbest", POST_PERMIT),
    ("izin verilir", POST_PERMIT),
    ("gerek yok", POST_OPT),
    ("şart değil", POST_OPT),
    ("ama", Cue::But),
    ("fakat", Cue::But),
];

/// Words that say nothing about the subject (after the cues, which are never subject terms).
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    // English.
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any",
    "anything", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between",
    "both", "by", "could", "did", "do", "does", "doing", "done", "down", "during", "each", "either",
    "else", "etc", "even", "ever", "every", "everything", "few", "for", "from", "further", "had",
    "has", "have", "having", "he", "her", "here", "him", "his", "how", "i", "if", "in", "into",
    "is", "it", "it's", "its", "itself", "just", "let", "let's", "me", "more", "most", "my",
    "myself", "nothing", "now", "of", "off", "on", "once", "one", "onto", "or", "other", "others",
    "our", "ours", "out", "own", "per", "please", "quite", "really", "same", "she", "so", "some",
    "something", "such", "than", "that", "that's", "the", "their", "theirs", "them", "then",
    "there", "these", "they", "this", "those", "through", "thus", "to", "too", "under", "until",
    "up", "upon", "us", "very", "via", "was", "we", "we're", "were", "what", "when", "where",
    "whether", "which", "while", "who", "whom", "why", "will", "with", "within", "would", "yet",
    "you", "you're", "your", "yours", "yourself", "e.g", "i.e", "eg", "ie", "instead", "rather",
    "whenever", "wherever", "already", "still", "anyway", "otherwise", "unless", "since", "like",
    "lot", "lots", "bit", "way", "thing", "things", "stuff", "really", "actually", "basically",
    "just", "simply", "whatever", "everywhere", "anywhere", "somewhere", "again", "today", "always",
    "never", "must", "should", "use", "used", "uses", "using", "usage", "don't", "do", "not", "ok",
    "okay", "fine", "allowed", "ever", "new", "make", "makes", "made", "making", "get", "gets",
    "got", "put", "take", "takes", "want", "wants", "need", "needs", "needed", "sure", "good",
    "bad", "better", "best", "so", "much", "many", "well", "first", "last", "next", "also", "via",
    "both", "can", "may", "might", "shall", "must", "set", "see", "look", "try", "tries", "it'll",
    "they're", "there's", "here's", "i'm", "i've", "we've", "you've", "isn't", "aren't", "wasn't",
    "weren't", "hasn't", "haven't", "hadn't", "won't", "wouldn't", "couldn't", "shouldn't",
    "mustn't", "didn't", "doesn't", "me", "agent", "claude", "assistant", "memory", "memories",
    "rule", "rules", "policy", "guideline", "guidelines", "convention", "conventions", "feedback",
    "etc.", "i.e.", "e.g.",
    // German.
    "der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer", "und",
    "oder", "mit", "für", "von", "zu", "zum", "zur", "im", "ins", "auf", "ist", "sind", "wir",
    "ich", "du", "sie", "es", "bei", "als", "auch", "wie", "wenn", "dann", "dass", "sich", "vor",
    "nach", "aus", "uns", "unsere", "unser", "bitte", "werden", "wird", "gegen",
    // Spanish.
    "el", "la", "los", "las", "un", "una", "unos", "unas", "y", "o", "de", "del", "en", "con",
    "para", "por", "que", "es", "son", "se", "lo", "al", "su", "sus", "nuestro", "nuestra", "cada",
    "todo", "todos", "todas", "antes", "después", "cuando", "como", "más", "muy", "siempre",
    "hagas", "haz",
    // French.
    "le", "les", "une", "des", "et", "ou", "du", "avec", "pour", "par", "est", "sont", "ce",
    "cette", "ces", "nous", "vous", "il", "elle", "ils", "dans", "sur", "au", "aux", "être",
    // Portuguese.
    "o", "um", "uma", "uns", "umas", "e", "do", "da", "dos", "das", "no", "na", "nos",
    "nas", "com", "para", "por", "pelo", "pela", "que", "é", "são", "se", "ao", "à", "seu",
    "sua", "nosso", "nossa", "todo", "toda", "todos", "todas", "cada", "depois", "quando",
    "como", "mais", "muito", "isso", "este", "esta", "esse", "essa", "nós", "ser", "está",
    // Italian.
    "il", "lo", "gli", "uno", "di", "dei", "degli", "delle", "della", "dello", "del", "nel",
    "nella", "nei", "nelle", "sul", "sulla", "al", "alla", "ai", "alle", "da", "dal", "dalla",
    "con", "per", "tra", "fra", "che", "è", "sono", "ha", "hanno", "si", "noi", "io", "ogni",
    "tutto", "tutti", "tutte", "prima", "dopo", "quando", "come", "più", "molto", "questo",
    "questa", "quello", "quella", "essere", "anche", "già",
    // Dutch.
    "de", "het", "een", "en", "van", "op", "voor", "met", "aan", "bij", "naar", "uit", "om",
    "dat", "die", "dit", "deze", "is", "zijn", "wordt", "worden", "werd", "we", "wij", "ik",
    "je", "jij", "u", "ons", "onze", "hun", "hij", "zij", "er", "ook", "dan", "als", "wanneer",
    "elke", "elk", "alle", "al", "nog", "door", "tot", "heeft", "hebben", "kan",
    "kunnen", "zo", "daar", "hier", "wat", "wie",
    // Polish.
    "i", "w", "we", "z", "ze", "na", "do", "od", "o", "po", "za", "przez", "dla", "przy", "to",
    "ta", "te", "tego", "tej", "jest", "są", "być", "się", "my", "ja", "nasz", "nasze",
    "nasza", "każdy", "każda", "każde", "wszystkie", "przed", "gdy", "kiedy", "jak", "lub",
    "albo", "oraz", "też", "także", "już", "czy", "co", "który", "która", "które",
    // Swedish.
    "en", "ett", "och", "eller", "att", "av", "på", "för", "med", "till", "från", "om", "i",
    "är", "vara", "blir", "har", "det", "den", "de", "detta", "denna", "dessa", "vi",
    "jag", "vår", "våra", "vårt", "man", "varje", "alla", "allt", "innan", "efter", "när",
    "som", "så", "också", "redan", "sig", "sin", "sitt", "sina", "vid", "över",
    // Turkish.
    "ve", "veya", "ya", "da", "de", "bir", "bu", "şu", "o", "için", "ile", "gibi", "her",
    "çok", "daha", "en", "ne", "biz", "ben", "bizim", "önce", "sonra", "zaman", "olarak",
    "olan", "ise", "ki", "mi", "tüm", "bütün",
];

/// Words that are subject terms but carry little on their own (half weight).
#[rustfmt::skip]
const GENERIC_WORDS: &[&str] = &[
    "test", "tests", "testing", "code", "file", "files", "function", "functions", "change",
    "changes", "project", "repo", "repository", "run", "runs", "running", "add", "adding", "write",
    "writing", "work", "working", "call", "calls", "check", "checks", "build", "value", "values",
    "type", "types", "name", "names", "line", "lines", "time", "case", "cases", "team", "people",
    "someone", "everyone", "part", "place", "step", "steps", "task", "tasks", "tool", "tools",
    "default", "start", "end", "keep", "old", "each", "any", "less", "small", "big", "large",
    "short", "long", "only", "right", "wrong", "new", "thing", "able", "something", "via", "issue",
    "issues", "bug", "bugs", "fix", "fixes", "commit", "commits", "version", "versions", "message",
    "messages", "error", "errors", "data", "api", "app", "application", "service", "services",
    "module", "modules", "package", "packages", "user", "users", "main", "local", "real", "one",
    "two", "three", "write", "written", "read", "go", "know", "explicit", "explicitly", "directly",
    "clear", "clean", "quick", "quickly", "slow", "fast", "easy", "hard", "whole", "full", "entire",
    "everything", "later", "soon", "now", "once", "twice", "day", "days", "week", "weeks", "month",
    "year", "am", "pm", "minute", "minutes", "hour", "hours", "second", "seconds", "cli", "ci",
    "branch", "branches",
    // Languages and frameworks say where a rule applies (a scope), not what it is about.
    "js", "ts", "javascript", "typescript", "python", "rust", "go", "golang", "java", "kotlin",
    "react", "node", "nodejs",
];

/// Subject terms (as keys: stemmed, glossary-normalised) that at least 5 of the 57 topics of the
/// development evaluation set use (`memsync-feedback-eval --terms dev`): the everyday words of
/// software work, which name no subject by themselves ("pr", "merge", "production", "customer").
/// Half weight, like [`GENERIC_WORDS`].
#[rustfmt::skip]
const COMMON_TERMS: &[&str] = &[
    "add", "api", "app", "backend", "build", "call", "chang", "ci", "client", "cod", "commit",
    "configuration", "customer", "deploy", "directory", "docker", "documentation", "environment",
    "fail", "featur", "fil", "fix", "format", "generat", "git", "go", "id", "internal", "key",
    "lin", "list", "local", "main", "merg", "message", "modul", "mov", "nam", "order", "packag",
    "path", "pr", "production", "python", "read", "release", "report", "repository", "review",
    "run", "servic", "src", "start", "stay", "test", "tim", "tru", "typ", "typescript", "ui",
    "user", "version", "web", "work", "writ", "written",
];

/// CJK character pairs that are too common to name a subject.
#[rustfmt::skip]
const CJK_GENERIC: &[&str] = &[
    "代码", "文件", "项目", "时候", "进行", "这个", "那个", "一个", "我们", "你们", "所有", "什么", "如果", "因为", "所以", "可能",
    "然后", "已经", "时间", "问题", "情况", "方式", "测试", "コード", "ファイル", "テスト", "場合", "必要", "今後", "全て", "すべ",
];

/// Verbs that start an imperative: after a comma they begin a positive directive
/// ("don't mock the database, hit a real one").
#[rustfmt::skip]
pub(crate) const IMPERATIVE_VERBS: &[&str] = &[
    "hit", "run", "write", "keep", "put", "call", "add", "pin", "set", "commit", "push", "rebase",
    "squash", "merge", "mock", "stub", "fake", "format", "name", "return", "wrap", "ask", "create",
    "make", "go", "stick", "leave", "log", "store", "print", "show", "display", "open", "read",
    "test", "check", "install", "document", "start", "end", "finish", "poll", "inject", "split",
    "extract", "generate", "include", "follow", "switch", "let", "tell", "mention", "reply",
    "answer", "respond", "fix", "bump", "stage", "spell", "indent", "quote", "prefix", "target",
    "point", "connect", "talk", "define", "declare", "raise", "throw", "handle", "pass", "send",
    "reset", "clean", "update", "sync", "rerun", "retry", "measure", "review", "explain",
    "summarize", "wait", "emit", "define", "annotate", "lint", "wrap", "break", "ship", "deploy",
    "release", "tag",
];

/// Words that open a condition: what follows is not a directive ("when squash-merging, …").
#[rustfmt::skip]
pub(crate) const CONDITION_WORDS: &[&str] = &[
    "when", "whenever", "if", "once", "while", "before", "after", "until", "wenn", "bevor",
    "nachdem", "falls", "cuando", "si", "antes", "después", "quand", "lorsque", "avant", "après",
];

/// Words that open a place or purpose: its words say where a rule applies, not what it is about
/// ("no emoji in commit messages").
#[rustfmt::skip]
pub(crate) const PLACE_WORDS: &[&str] = &[
    "in", "inside", "within", "on", "under", "at", "during", "across", "throughout", "for", "from",
    "per", "into", "im", "bei", "für", "auf", "en", "para", "durante", "dans", "pour", "sur",
];

/// Spans that look like a lexicon choice but name none; claimed before the concepts are
/// matched ("npm packages" are packages from the registry, whatever installs them).
const NOT_CHOICES: &[&str] = &[
    r"\bnpm (?:dependenc\w*|packages?|registry|modules?|ecosystem|librar\w*|versions?)\b",
    r"\bspaces? in (?:file ?names?|paths?|names?|urls?)\b",
];

/// Labels that start the context part of a feedback memory (`**Why:**`, `**How to apply:**`);
/// the directive is what comes before.
#[rustfmt::skip]
pub(crate) const CONTEXT_LABELS: &[&str] = &[
    "why", "how to apply", "how", "reason", "reasons", "rationale", "context", "because",
    "background", "example", "examples", "motivation", "理由", "原因", "背景", "适用", "如何", "怎么", "適用",
    "使い方", "方法", "例", "warum", "wie", "grund", "anwendung", "hintergrund", "beispiel", "por qué",
    "por que", "porque", "cómo", "como aplicar", "cómo aplicar", "motivo", "razón", "contexto",
    "pourquoi", "comment", "raison", "이유", "적용", "방법", "perché", "motivazione", "esempio",
    "waarom", "reden", "voorbeeld", "achtergrond", "dlaczego", "powód", "przykład", "varför",
    "därför", "exempel", "bakgrund", "neden", "gerekçe", "örnek", "por quê", "exemplo",
];

/// One choice of a concept: its name and the patterns that name it.
pub(crate) struct ChoiceDef {
    pub label: &'static str,
    /// Regexes over the lower-cased text. A named group `c` marks where the choice is named
    /// (for its polarity); otherwise the whole match does. `{G}` is a gap between words inside
    /// one sentence, `{W}` up to four words, `{W2}` up to two.
    pub patterns: &'static [&'static str],
}

/// A domain concept: several terms that name one subject, and (when `exclusive`) alternatives
/// of which a rule picks one (tabs vs spaces).
pub(crate) struct ConceptDef {
    pub label: &'static str,
    pub exclusive: bool,
    /// The concept only counts when its sentence (or the description) also matches this.
    pub context: Option<&'static str>,
    pub choices: &'static [ChoiceDef],
}

const fn ch(label: &'static str, patterns: &'static [&'static str]) -> ChoiceDef {
    ChoiceDef { label, patterns }
}

const INDENT_CONTEXT: &str = r"indent|\btabs?\b|\d[- ]?spaces?\b|space[- ]indent|インデント|缩进|縮排|einrück|sangr|タブ|制表";

/// The domain lexicon. Order matters: where an earlier concept or choice names a choice, a later
/// one does not name another ("rebase and merge" is a merge strategy, any other "rebase" updates
/// a branch) ("rebase onto main" is how a branch is updated, not a merge strategy;
/// "--force-with-lease" is not a plain "--force").
pub(crate) const CONCEPTS: &[ConceptDef] = &[
    ConceptDef {
        label: "how pull requests are merged",
        exclusive: true,
        context: Some(
            r"merg|\bprs?\b|pull request|history|\bmain\b|commit|fusion|合并|マージ|プルリク|zusammenf|fusiona",
        ),
        choices: &[
            ch("squash", &[r"\bsquash\w*", r"スカッシュ", r"压缩合并"]),
            ch(
                "merge commit",
                &[
                    r"\bmerge[- ]commits?\b",
                    r"--no-ff\b",
                    r"\bno-fast-forward\b",
                    r"\bmerge-commits?\b",
                    r"マージコミット|合并提交",
                ],
            ),
            ch(
                "rebase",
                &[
                    r"\brebase[- ]and[- ]merge\b",
                    r"\brebase[- ]merg\w*",
                    r"\bmerg\w* (?:them |prs |it )?by rebas\w*",
                    r"(?P<c>\brebase|リベース|变基)[^。！？；\n.]{0,12}?(?:マージ|合并)",
                ],
            ),
        ],
    },
    ConceptDef {
        label: "how branches are brought up to date",
        exclusive: true,
        context: None,
        choices: &[
            ch(
                "rebase",
                &[
                    r"(?P<c>\brebas\w*){W2}(?:onto|on top of|on)\s+(?:the\s+)?(?:latest\s+)?(?:origin/)?(?:main|master|develop|trunk|upstream|base)\b",
                    r"(?P<c>\brebas\w*)\s+(?:\S+\s+){0,3}?branch\w*",
                    r"\bpull --rebase\b",
                    // Any other rebase updates a branch ("after a rebase").
                    r"\brebas\w*",
                    r"リベース|变基",
                ],
            ),
            ch(
                "merge",
                &[
                    r"(?P<c>\bmerg\w*)\s+(?:the\s+)?(?:latest\s+)?(?:origin/)?(?:main|master|develop|trunk|upstream)\s+(?:branch\s+)?into\b",
                    r"(?P<c>\bmerg\w*)\s+(?:\S+\s+){0,3}?into\s+(?:your|the|my|their)\s+(?:own\s+|feature\s+|pr\s+)?branch",
                ],
            ),
        ],
    },
    ConceptDef {
        label: "the JavaScript package manager",
        exclusive: true,
        context: None,
        choices: &[
            ch("npm", &[r"\bnpm\b"]),
            ch("pnpm", &[r"\bpnpm\b"]),
            ch("yarn", &[r"\byarn\b"]),
            ch("bun", &[r"\bbun\b"]),
        ],
    },
    ConceptDef {
        label: "the Python package manager",
        exclusive: true,
        context: None,
        choices: &[
            ch("pip", &[r"\bpip3?\b", r"\brequirements\.txt\b"]),
            ch("poetry", &[r"\bpoetry\b"]),
            ch("uv", &[r"\buv\b"]),
            ch("pipenv", &[r"\bpipenv\b"]),
            ch("conda", &[r"\bconda\b"]),
        ],
    },
    ConceptDef {
        label: "indentation",
        exclusive: true,
        context: Some(INDENT_CONTEXT),
        choices: &[
            ch(
                "tabs",
                &[
                    r"\btabs?\b",
                    r"\btab characters?\b",
                    r"\bhard tabs\b",
                    r"タブ",
                    r"制表符",
                    r"\btabulator\w*",
                    r"\btabulaci\w*",
                    r"\btabuladores\b",
                ],
            ),
            ch(
                "spaces",
                &[
                    r"\bspaces?\b",
                    r"\bsoft tabs\b",
                    r"スペース",
                    r"空格",
                    r"\bleerzeichen\b",
                    r"\bespacios\b",
                ],
            ),
        ],
    },
    ConceptDef {
        label: "indentation width",
        exclusive: true,
        context: Some(INDENT_CONTEXT),
        choices: &[
            ch(
                "2 spaces",
                &[
                    r"\b(?:2|two)[- ]?spaces?\b",
                    r"スペース\s?(?P<c>2)",
                    r"2\s?个空格",
                    r"\b2 leerzeichen",
                    r"\b2 espacios",
                ],
            ),
            ch(
                "4 spaces",
                &[
                    r"\b(?:4|four)[- ]?spaces?\b",
                    r"スペース\s?(?P<c>4)",
                    r"4\s?个空格",
                    r"\b4 leerzeichen",
                    r"\b4 espacios",
                ],
            ),
            ch("8 spaces", &[r"\b(?:8|eight)[- ]?spaces?\b"]),
        ],
    },
    ConceptDef {
        label: "naming style",
        exclusive: true,
        context: None,
        choices: &[
            ch(
                "PascalCase",
                &[
                    r"\bpascal[ -]?case\b",
                    r"\bupper ?camel[ -]?case\b",
                    r"大驼峰",
                ],
            ),
            ch(
                "camelCase",
                &[
                    r"\bcamel[ -]?case\b",
                    r"\blower ?camel[ -]?case\b",
                    r"驼峰",
                    r"キャメルケース",
                ],
            ),
            ch(
                "SCREAMING_SNAKE_CASE",
                &[
                    r"\bscreaming[ _-]snake[ _-]?case\b",
                    r"\bupper[ _-]snake[ _-]?case\b",
                    r"\ball[ _-]caps\b",
                ],
            ),
            ch(
                "snake_case",
                &[r"\bsnake[ _-]?case\b", r"蛇形", r"スネークケース"],
            ),
            ch(
                "kebab-case",
                &[
                    r"\bkebab[ -]?case\b",
                    r"\bdash[ -]case\b",
                    r"\bspinal[ -]case\b",
                    r"ケバブケース",
                ],
            ),
        ],
    },
    ConceptDef {
        label: "the timezone of times",
        exclusive: true,
        context: None,
        choices: &[
            ch("UTC", &[r"\butc\b", r"\bgmt\b", r"\bzulu\b"]),
            ch(
                "local time",
                &[
                    r"\blocal (?:time|timezone|time ?zones?|times)\b",
                    r"\buser'?s? (?:own |local )?(?:time ?zone|timezone|local time)",
                    r"\b(?:their|your|the viewer'?s|the user'?s) (?:own )?(?:local )?(?:time ?zone|timezone)",
                    r"\bserver'?s? (?:local )?(?:time ?zone|timezone)",
                    r"本地时间|当地时间|本地时区|ローカル時間|ローカルタイム|現地時間",
                    r"\bortszeit\b|\blokale[nrs]? zeit\b|\bhora local\b|\bheure locale\b|\bfuseau horaire local\b",
                ],
            ),
        ],
    },
    ConceptDef {
        label: "the database in tests",
        exclusive: true,
        context: Some(r"test|spec\b|fixture|\bci\b|测试|テスト|prueba|essai"),
        choices: &[
            ch(
                "mock",
                &[
                    r"(?P<c>\bmock\w*|\bfake\w*|\bstub\w*|\bin-memory\b){W}(?:database|databases|\bdb\b|\bdbs\b|postgres\w*|mysql|datastore|storage layer|repositor\w*)",
                    r"(?:\bdatabase|\bdb\b|postgres\w*|mysql|\brepositor\w*){W}(?P<c>mock\w*|fake\w*|stub\w*)",
                    r"(?P<c>\bsqlite\b|\bin-memory (?:database|db)\b)",
                    r"(?P<c>mock|模拟|假)[^。！？；\n]{0,8}?(?:数据库|\bdb\b)",
                    r"(?:数据库|\bdb\b)[^。！？；\n]{0,8}?(?P<c>mock|模拟)",
                    r"(?P<c>モック)[^。！？；\n]{0,10}?(?:データベース|\bdb\b)",
                    r"(?:データベース|\bdb\b)[^。！？；\n]{0,10}?(?P<c>モック|mock)",
                    r"(?:\bdatenbank\w*){W}(?P<c>gemockt|mocken|mock\w*)",
                    r"(?P<c>\bmock\w*){W}datenbank",
                    r"(?P<c>\bmock\w*|\bsimula\w*|\bfals[ao]s?\b)[^.;\n]{0,20}?base de datos",
                    r"base de datos{W}(?P<c>mock\w*|simulad\w*)",
                ],
            ),
            ch(
                "real",
                &[
                    r"(?P<c>\breal\b|\bactual\b|\blive\b|\bthrowaway\b|\bdisposable\b|\bdockerized\b|\bephemeral\b|\bgenuine\b){W2}(?:database|\bdb\b|postgres\w*|mysql|instance)",
                    r"(?P<c>\bhit\w*|\btalk\w* to|\bconnect\w* to|\brun\w* against|\bagainst)\s+(?:a |the |an )?(?:real |actual |test |live |local )?(?:database|\bdb\b|postgres\w*|mysql)",
                    r"\btestcontainers\b",
                    r"(?P<c>真实|真正|实际)的?(?:数据库|\bdb\b)",
                    r"(?P<c>本物|実際|実)の?(?:データベース|\bdb\b)",
                    r"(?P<c>\becht\w*|\breal\w*)\s+datenbank",
                    r"base de datos (?P<c>real(?:es)?)\b",
                    r"(?P<c>\bvraie) base",
                ],
            ),
        ],
    },
    ConceptDef {
        label: "line length",
        exclusive: true,
        context: Some(
            r"column|\bcols?\b|char|line length|line width|line-length|max[_ -]?width|\bwide\b|print[_ -]?width|max[_ -]?line|行长|行宽|文字|桁|zeichen|caracteres",
        ),
        choices: &[
            ch("72", &[r"\b72\b"]),
            ch("79", &[r"\b79\b"]),
            ch("80", &[r"\b80\b"]),
            ch("88", &[r"\b88\b"]),
            ch("90", &[r"\b90\b"]),
            ch("100", &[r"\b100\b"]),
            ch("110", &[r"\b110\b"]),
            ch("120", &[r"\b120\b"]),
            ch("132", &[r"\b132\b"]),
            ch("140", &[r"\b140\b"]),
            ch("160", &[r"\b160\b"]),
        ],
    },
    ConceptDef {
        label: "string quote style",
        exclusive: true,
        context: None,
        choices: &[
            ch("single quotes", &[r"\bsingle[- ]quot\w*"]),
            ch("double quotes", &[r"\bdouble[- ]quot\w*"]),
        ],
    },
    ConceptDef {
        label: "the JavaScript test runner",
        exclusive: true,
        // Polish "jest" is "is": the runner is named where tests are.
        context: Some(
            r"test|spec|mock|snapshot|runner|vitest|mocha|coverage|javascript|typescript|\b[jt]sx?\b|node|npm|pnpm|yarn|frontend|テスト|测试|테스트",
        ),
        choices: &[
            ch("jest", &[r"\bjest\b"]),
            ch("vitest", &[r"\bvitest\b"]),
            ch("mocha", &[r"\bmocha\b"]),
        ],
    },
    ConceptDef {
        label: "the Python test runner",
        exclusive: true,
        context: None,
        choices: &[
            ch("pytest", &[r"\bpytest\b"]),
            ch("unittest", &[r"\bunittest\b"]),
        ],
    },
    ConceptDef {
        label: "the Python formatter",
        exclusive: true,
        context: Some(r"format|python|\.py\b|\bpep"),
        choices: &[
            ch("black", &[r"\bblack\b"]),
            ch("ruff", &[r"\bruff\b"]),
            ch("yapf", &[r"\byapf\b"]),
            ch("autopep8", &[r"\bautopep8\b"]),
        ],
    },
    ConceptDef {
        label: "the JavaScript formatter",
        exclusive: true,
        context: None,
        choices: &[
            ch("prettier", &[r"\bprettier\b"]),
            ch("biome", &[r"\bbiome\b"]),
            ch("dprint", &[r"\bdprint\b"]),
        ],
    },
    ConceptDef {
        label: "the async runtime",
        exclusive: true,
        context: None,
        choices: &[
            ch("tokio", &[r"\btokio\b"]),
            ch("async-std", &[r"\basync[-_]std\b"]),
            ch("smol", &[r"\bsmol\b"]),
        ],
    },
    ConceptDef {
        label: "how SQL queries are written",
        exclusive: true,
        context: None,
        choices: &[
            ch(
                "an ORM",
                &[
                    r"\borms?\b",
                    r"\bdiesel\b",
                    r"\bsea-orm\b",
                    r"\bprisma\b",
                    r"\btypeorm\b",
                    r"\bactiverecord\b",
                ],
            ),
            ch(
                "raw SQL",
                &[
                    r"\braw sql\b",
                    r"\bplain sql\b",
                    r"\bhand-?written sql\b",
                    r"\bsqlx\b",
                ],
            ),
        ],
    },
    ConceptDef {
        label: "the shell scripts are written for",
        exclusive: true,
        context: Some(r"script|shebang|shell|#!"),
        choices: &[
            ch(
                "bash",
                &[
                    r"#!/(?:usr/)?bin/(?:env )?bash\b",
                    r"\bbash\b",
                    r"\bbashisms?\b",
                ],
            ),
            ch(
                "POSIX sh",
                &[r"#!/bin/sh\b", r"\bposix(?: sh| shell)?\b", r"\bdash\b"],
            ),
        ],
    },
    ConceptDef {
        label: "the container tool",
        exclusive: true,
        context: None,
        choices: &[
            ch("docker", &[r"\bdocker(?:[- ]compose)?\b"]),
            ch("podman", &[r"\bpodman\b"]),
        ],
    },
    ConceptDef {
        label: "the config file format",
        exclusive: true,
        context: Some(r"config|settings|konfig|設定|配置"),
        choices: &[
            ch("TOML", &[r"\btoml\b"]),
            ch("YAML", &[r"\bya?ml\b"]),
            ch("JSON", &[r"\bjson\b"]),
        ],
    },
    ConceptDef {
        label: "how components are styled",
        exclusive: true,
        context: None,
        choices: &[
            ch("Tailwind", &[r"\btailwind\w*"]),
            ch("CSS modules", &[r"\bcss modules?\b"]),
            ch(
                "CSS-in-JS",
                &[r"\bstyled-components\b", r"\bcss-in-js\b", r"\bemotion\b"],
            ),
        ],
    },
    ConceptDef {
        label: "dependency version pinning",
        exclusive: true,
        context: Some(r"depend|version|package|crate|librar|\bdeps?\b|依赖|依存|abhängigkeit"),
        choices: &[
            ch(
                "exact pins",
                &[r"\bpin\w*", r"\bexact versions?\b", r"--save-exact\b"],
            ),
            ch(
                "version ranges",
                &[
                    r"\bcaret\b",
                    r"\bversion ranges?\b",
                    r"\bsemver ranges?\b",
                    r"\btilde\b",
                    r"\branges?\b",
                ],
            ),
        ],
    },
    ConceptDef {
        label: "the primary key type",
        exclusive: true,
        context: None,
        choices: &[
            ch("UUIDs", &[r"\buuid\w*", r"\bulids?\b"]),
            ch(
                "integer ids",
                &[
                    r"\bbigserial\b",
                    r"\bserial (?:ids?|primary keys?|keys?|columns?)\b",
                    r"\bauto[- ]?increment\w*",
                    r"\bidentity columns?\b",
                    r"\binteger (?:primary )?(?:keys?|ids?)\b",
                    r"\bsequential ids?\b",
                ],
            ),
        ],
    },
    ConceptDef {
        label: "the timestamp format",
        exclusive: true,
        context: Some(r"time|date"),
        choices: &[
            ch(
                "ISO 8601",
                &[
                    r"\biso[- ]?8601\b",
                    r"\brfc[- ]?3339\b",
                    r"\biso (?:format|strings?|timestamps?)\b",
                ],
            ),
            ch(
                "epoch numbers",
                &[r"\bunix (?:time|timestamps?|epoch|seconds)\b", r"\bepoch\b"],
            ),
        ],
    },
    ConceptDef {
        label: "how long answers are",
        exclusive: true,
        context: Some(
            r"answer|respon|repl|expla|summar|回答|返答|返信|回复|答复|antwort|respuesta|réponse",
        ),
        choices: &[
            ch(
                "concise",
                &[
                    r"\bconcise\b",
                    r"\b(?:short|brief)(?:\s+and\s+\w+(?:\s+\w+)?)?\s+(?:answers?|responses?|replies|explanations?)\b",
                    r"(?:answers?|responses?|replies|explanations?)(?:\s+\w+){0,3}\s+(?:short|brief)\b",
                    r"\bterse\b",
                    r"\bsuccinct\b",
                    r"\bto the point\b",
                    r"简洁|簡潔|簡単に",
                    r"\bkurz\w*",
                    r"\bbreve\b",
                ],
            ),
            ch(
                "detailed",
                &[
                    r"\bdetailed\b",
                    r"\bverbose\b",
                    r"\bthorough\w*",
                    r"\bin[- ]depth\b",
                    r"\bin detail\b",
                    r"\bexhaustive\b",
                    r"详细|詳しく|詳細",
                    r"\bausführlich\w*",
                    r"\bdetallad\w*",
                ],
            ),
        ],
    },
    ConceptDef {
        label: "the language to write in",
        exclusive: true,
        context: None,
        choices: &[
            ch(
                "English",
                &[
                    r"\benglish\b",
                    r"英語|英语|英文",
                    r"\benglisch\w*",
                    r"\binglés\b",
                    r"\bingles\b",
                    r"\banglais\b",
                ],
            ),
            ch(
                "German",
                &[
                    r"\bgerman\b",
                    r"\bdeutsch\w*",
                    r"ドイツ語|德语|德文",
                    r"\balemán\b",
                ],
            ),
            ch(
                "Japanese",
                &[
                    r"\bjapanese\b",
                    r"日本語|日语|日文",
                    r"\bjapanisch\w*",
                    r"\bjaponés\b",
                ],
            ),
            ch(
                "Chinese",
                &[
                    r"\bchinese\b",
                    r"中文|汉语|中国語|简体",
                    r"\bchinesisch\w*",
                    r"\bchino\b",
                ],
            ),
            ch(
                "Spanish",
                &[
                    r"\bspanish\b",
                    r"\bespañol\b",
                    r"\bespanol\b",
                    r"\bspanisch\w*",
                    r"スペイン語|西班牙语",
                    r"\bcastellano\b",
                ],
            ),
            ch(
                "French",
                &[
                    r"\bfrench\b",
                    r"\bfrançais\b",
                    r"\bfrancais\b",
                    r"\bfranzösisch\w*",
                    r"フランス語|法语",
                    r"\bfrancés\b",
                ],
            ),
            ch("Korean", &[r"\bkorean\b", r"한국어|韓国語|韩语"]),
        ],
    },
    ConceptDef {
        label: "when tests are written",
        exclusive: true,
        context: Some(r"test|\btdd\b|テスト|测试"),
        choices: &[
            ch(
                "tests first",
                &[
                    r"\btdd\b",
                    r"\btest[- ]driven\b",
                    r"\btests? first\b",
                    r"\bfailing tests?\b",
                    r"\btests? before (?:the |any |writing )*(?:code|implementation|fix)",
                    r"\bred[- ]green\b",
                ],
            ),
            ch(
                "tests after",
                &[
                    r"\btests? (?:afterwards|later)\b",
                    r"\b(?:add|write)\w* tests? after\b",
                    r"\btests? after (?:the )?(?:implementation|code|fact)\b",
                    r"\bimplementation first\b",
                    r"\bcode first\b",
                    r"\bafter (?:the )?(?:implementation|code) (?:works|is done)",
                ],
            ),
        ],
    },
    ConceptDef {
        label: "letter case of messages",
        exclusive: true,
        context: Some(r"message|string|text|heading|title|comment|\blog|sentence"),
        choices: &[
            ch(
                "capitalized",
                &[
                    r"\bcapital\w*",
                    r"\buppercase\b",
                    r"\bupper[- ]case\b",
                    r"\bsentence case\b",
                    r"\btitle case\b",
                ],
            ),
            ch("lowercase", &[r"\blower[- ]?case\w*", r"\ball lower\b"]),
        ],
    },
    ConceptDef {
        label: "the lockfile",
        exclusive: false,
        context: None,
        choices: &[ch(
            "lockfile",
            &[
                r"\block ?files?\b",
                r"\bpnpm-lock\.yaml\b",
                r"\bpackage-lock\.json\b",
                r"\byarn\.lock\b",
                r"\bcargo\.lock\b",
                r"\bpoetry\.lock\b",
                r"\buv\.lock\b",
                r"\bgemfile\.lock\b",
                r"锁文件|ロックファイル",
            ],
        )],
    },
    ConceptDef {
        label: "asking before acting",
        exclusive: false,
        context: Some(r"\bbefore\b|\bfirst\b|without|\bwait\w* for|permission|sign[- ]?off|approv"),
        choices: &[ch(
            "ask first",
            &[
                r"\bask(?:s|ed|ing)?\b(?:{G}(?:me|us|the|a|an|team|lead|owner|someone))*(?:{G}(?:first|before|for (?:permission|approval|sign[- ]?off)))",
                r"\bwithout (?:first )?(?P<c>ask\w*)",
                r"\bsign[- ]?off\b",
                r"\bpermission\b",
            ],
        )],
    },
    ConceptDef {
        label: "force-pushing",
        exclusive: false,
        context: None,
        choices: &[
            ch(
                "--force-with-lease",
                &[r"--force-with-lease\b", r"\bforce-with-lease\b"],
            ),
            ch(
                "force-push",
                &[
                    r"\bforce[- ]?push\w*",
                    r"\bpush (?:-f|--force)\b",
                    r"--force\b",
                    r"强推|強制プッシュ|フォースプッシュ",
                ],
            ),
        ],
    },
    ConceptDef {
        label: "bypassing git hooks",
        exclusive: false,
        context: None,
        choices: &[ch(
            "bypass hooks",
            &[
                r"--no-verify\b",
                r"(?P<c>\b(?:bypass|skip|disabl)\w*)(?:{G}(?:the|git|pre-commit|pre-push|commit|our|any))*{G}hooks?\b",
            ],
        )],
    },
    ConceptDef {
        label: "debug print statements",
        exclusive: false,
        context: None,
        choices: &[ch(
            "debug prints",
            &[
                r"\bconsole\.log\b",
                r"\bprintln!",
                r"\beprintln!",
                r"\bdbg!",
                r"\bprint\(\)",
                r"\bprint statements?\b",
                r"\bprintf?[- ]debugging\b",
                r"\bdebug prints?\b",
                r"\bprint\(",
            ],
        )],
    },
    ConceptDef {
        label: "staging everything at once",
        exclusive: false,
        context: None,
        choices: &[ch(
            "git add -A",
            &[
                r"\bgit add (?:-a\b|--all\b|\.(?:\s|$))",
                r"\bgit commit -am?\b",
            ],
        )],
    },
    ConceptDef {
        label: "emoji",
        exclusive: false,
        context: None,
        choices: &[ch(
            "emoji",
            &[r"\bemojis?\b", r"\bgitmoji\b", r"絵文字|表情符号|이모지"],
        )],
    },
    ConceptDef {
        label: "end-of-task summaries",
        exclusive: false,
        context: Some(
            r"respon|answer|repl|task|turn|message|change|\bend\b|finish|回答|总结|まとめ",
        ),
        choices: &[ch(
            "summary",
            &[
                r"\bsummar(?:y|ies|ize|ise|ising|izing)\b",
                r"\brecaps?\b",
                r"\btl;?dr\b",
                r"总结|まとめ|要約",
                r"\bzusammenfassung\w*",
                r"\bresumen\b",
            ],
        )],
    },
    ConceptDef {
        label: "doc comments",
        exclusive: false,
        context: None,
        choices: &[ch(
            "doc comments",
            &[
                r"\bdocstrings?\b",
                r"\bdoc[- ]?comments?\b",
                r"\bdocumentation comments?\b",
                r"\brustdoc\b",
                r"\bjsdoc\b",
                r"\bjavadoc\b",
                r"文档注释|ドキュメントコメント",
            ],
        )],
    },
    ConceptDef {
        label: "type annotations",
        exclusive: false,
        context: None,
        choices: &[ch(
            "type annotations",
            &[
                r"\btype[- ]hints?\b",
                r"\btype annotations?\b",
                r"\btype-annotated\b",
                r"\bfully typed\b",
                r"\bmypy --strict\b",
                r"类型注解|型ヒント|型注釈",
            ],
        )],
    },
    ConceptDef {
        label: "sleeps in tests",
        exclusive: false,
        context: Some(r"test|spec\b|テスト|测试"),
        choices: &[ch(
            "sleep",
            &[r"\bsleep\w*", r"\bsettimeout\b", r"\bthread::sleep\b"],
        )],
    },
    ConceptDef {
        label: "commit message prefixes",
        exclusive: false,
        context: None,
        choices: &[ch(
            "conventional commits",
            &[
                r"\bconventional[- ]commits?\b",
                r"\bconventional[- ]commit (?:format|prefix\w*|style)\b",
                r"\b(?:feat|fix|chore|refactor|docs|perf|build|style)(?:\([\w-]+\))?!?:(?:\s|,|$)",
            ],
        )],
    },
    ConceptDef {
        label: "feature flags",
        exclusive: false,
        context: None,
        choices: &[ch(
            "feature flags",
            &[r"\bfeature[- ]?flags?\b", r"\bfeature toggles?\b"],
        )],
    },
    ConceptDef {
        label: "trailing commas",
        exclusive: false,
        context: None,
        choices: &[ch("trailing commas", &[r"\btrailing commas?\b"])],
    },
    ConceptDef {
        label: "semicolons",
        exclusive: false,
        context: None,
        choices: &[ch(
            "semicolons",
            &[r"\bsemi-?colons?\b", r"分号|セミコロン"],
        )],
    },
];

/// A scope dimension: values of one qualifier that separate rules ("shared branches" vs "your
/// own branch"). Two rules are in different scopes when, in some dimension, both name values
/// and none in common.
pub(crate) struct ScopeDim {
    pub values: &'static [(&'static str, &'static str)],
}

pub(crate) const SCOPES: &[ScopeDim] = &[
    // Which branches.
    ScopeDim {
        values: &[
            (
                "shared branches",
                r"\b(?:push\w*|commit\w*|merg\w*|land\w*|deploy\w*)(?:\s+\S+){0,3}?\s+(?:to|into|on)\s+(?:the\s+)?(?:origin/)?(?:main|master|develop|trunk)\b|\bpush\w*\s+(?:origin\s+)?(?:main|master|develop|trunk)\b|\b(?:main|master|develop|trunk|release|protected|shared|public|default)[- ]branch\w*|\brelease/|\borigin/(?:main|master)\b|(?:someone else'?s|somebody else'?s|other people'?s|others'?|a teammate'?s) branch\w*|\bbranch\w* (?:that |which )?(?:someone|somebody|anyone|others?) else\b|共享分支|主分支|メインブランチ|共有ブランチ|\bhauptbranch\b|\brama principal\b|\bramas compartidas\b",
            ),
            (
                "your own branch",
                r"\b(?:your|my|their) own\b(?:\s+\S+){0,2}\s+branch\w*|\bfeature[- ]branch\w*|\b(?:personal|private|local|topic|wip|unpushed|scratch) branch\w*|\bunpushed\b|\bbefore (?:you )?push\w*|\byour (?:pr|feature) branch\w*|自己的分支|功能分支|個人ブランチ|自分のブランチ|\beigene\w* branch\w*|\bfeature-zweig\w*|\brama propia\b|\btu propia rama\b",
            ),
        ],
    },
    // Where the text goes.
    ScopeDim {
        values: &[
            (
                "logs",
                r"\blog(?:s|ging|ged|ger|gers)?\b|\btracing\b|日志|ログ|\bprotokoll\w*|\bregistros?\b|\bjournaux\b",
            ),
            (
                "display",
                r"\bcli output\b|\bterminal\b|\bstdout\b|\bui\b|\buser[- ]facing\b|\bdisplay\w*|\bshow(?:n|s)? (?:to )?(?:the )?users?\b|\bhuman[- ]readable\b|\bin the (?:browser|app|dashboard)\b|\bdashboard\b|界面|显示|表示|画面|\banzeige\w*|\bpantalla\b|\binterfaz\b|\baffich\w*",
            ),
            (
                "storage and APIs",
                r"\bstor(?:e|ed|es|age|ing)\b|\bpersist\w*|\bdatabase columns?\b|\bin the (?:db|database)\b|\bserializ\w*|\bon disk\b|\bwire format\b|\bin the api\b|\bapi (?:payloads?|responses?|fields?)\b|存储|保存|\bspeicher\w*|\balmacen\w*",
            ),
            (
                "commit messages",
                r"\bcommit (?:messages?|subjects?|titles?|bodies|body)\b|\bcommit-nachricht\w*|提交信息|コミットメッセージ|\bmensajes? de commit\b",
            ),
            (
                "pull request text",
                r"\bpr (?:titles?|descriptions?)\b|\bpull request (?:titles?|descriptions?)\b",
            ),
            ("code comments", r"\b(?:code )?comments?\b|注释|コメント"),
            (
                "source code",
                r"\b(?:source )?code\b|\bsource files?\b|代码|コード",
            ),
            ("docs", r"\bdocs\b|\bdocumentation\b|\breadme\b"),
            (
                "replies",
                r"\brespon(?:d|ses?)\b|\brepl(?:y|ies)\b|\banswers?\b|\btalk to me\b|\bchat\b|\bexplanations?\b|回答|回复|返答|返信|\bantwort\w*|\brespuestas?\b|\bresponde\b",
            ),
        ],
    },
    // Test code or production code.
    ScopeDim {
        values: &[
            (
                "tests",
                r"\btests?\b|\btesting\b|\b(?:unit|integration|e2e|end-to-end|system|acceptance|regression|snapshot|smoke|load)[- ]?tests?\b|\bintegrationstests?\b|\bspecs?\b|\bfixtures?\b|#\[test\]|#\[cfg\(test\)\]|测试|テスト|\bpruebas?\b",
            ),
            (
                "production code",
                r"\bproduction\b|\bprod\b|\blibrary code\b|\blib code\b|\bnon-test\b|\bapplication code\b|\bapp code\b|\bruntime code\b|\bshipp(?:ed|ing) code\b|\bsrc/|\bserver code\b|\blibrar(?:y|ies)\b|\b(?:request |http |route )?handlers?\b|生产|本番|\bproduktion\w*|\bproducción\b",
            ),
        ],
    },
    // Kind of test.
    ScopeDim {
        values: &[
            (
                "unit tests",
                r"\bunit[- ]?tests?\b|单元测试|単体テスト|ユニットテスト|\bpruebas unitarias\b",
            ),
            (
                "integration tests",
                r"\bintegration[- ]?tests?\b|\be2e\b|\bend[- ]to[- ]end\b|\bsystem tests?\b|\bacceptance tests?\b|集成测试|結合テスト|統合テスト|\bintegrationstests?\b|\bpruebas de integraci\w+",
            ),
        ],
    },
    // Frontend or backend.
    ScopeDim {
        values: &[
            (
                "frontend",
                r"\bfront[- ]?end\b|\bclient[- ]side\b|\bbrowser\b|\breact\b|\bvue\b|\bsvelte\b|\bweb app\b|前端|フロントエンド",
            ),
            (
                "backend",
                r"\bback[- ]?end\b|\bserver[- ]side\b|\bthe server\b|\bserver code\b|后端|バックエンド",
            ),
        ],
    },
    // Where it runs.
    ScopeDim {
        values: &[
            (
                "CI",
                r"\bci\b|\bpipelines?\b|\bgithub actions\b|\bgitlab ci\b|持续集成",
            ),
            (
                "locally",
                r"\blocally\b|\blocal (?:dev|development|machine|env\w*|checkout|builds?|runs?)\b|\bon your (?:machine|laptop)\b|\bdev machine\b|\blaptop\b|本地开发|本地环境|在本地|ローカル環境|\blokal\b",
            ),
        ],
    },
    // Language of the code.
    ScopeDim {
        values: &[
            (
                "Rust",
                r"\brust\b|\.rs\b|\bcargo\b|\bprintln!|\beprintln!|\bdbg!",
            ),
            ("Python", r"\bpython\b|\.py\b|\bprint\(\)"),
            (
                "Go",
                r"\bgolang\b|\bgo (?:code|files?|services?|modules?)\b|\.go\b|\bin go\b",
            ),
            (
                "JavaScript/TypeScript",
                r"\btypescript\b|\bjavascript\b|\bts\b|\bjs\b|\.tsx?\b|\.jsx?\b|\bnode(?:\.js)?\b|\bconsole\.\w+",
            ),
            ("Java/Kotlin", r"\bjava\b|\bkotlin\b"),
            (
                "SQL",
                r"\bsql files?\b|\.sql\b|\bin sql\b|\bsql identifiers?\b",
            ),
            ("shell", r"\bshell scripts?\b|\bbash scripts?\b|\.sh\b"),
            ("Makefiles", r"\bmakefiles?\b"),
            ("YAML", r"\.ya?ml\b|\byaml files?\b|\byaml\b"),
            ("Markdown", r"\bmarkdown\b|\.md\b"),
        ],
    },
    // What is being named.
    ScopeDim {
        values: &[
            (
                "file names",
                r"\bfile ?names?\b|\bfiles? (?:and|or) (?:directories|folders)\b|\bdirectory names?\b|ファイル名|文件名|\bdateinamen\b",
            ),
            (
                "variables and functions",
                r"\bvariables?\b|\bfunctions?\b|\bmethods?\b",
            ),
            (
                "types and components",
                r"\btypes?\b|\bclass(?:es)?\b|\bstructs?\b|\bcomponents?\b|\binterfaces?\b|\benums?\b",
            ),
            ("constants", r"\bconstants?\b|\benv(?:ironment)? var\w*"),
            (
                "fields",
                r"\bjson\b|\bfields?\b|\bpayloads?\b|\bproperties\b",
            ),
            (
                "columns and tables",
                r"\bcolumns?\b|\btables?\b|\bsql identifiers?\b",
            ),
            ("branch names", r"\bbranch names?\b"),
        ],
    },
    // Which deployment environment.
    ScopeDim {
        values: &[
            (
                "production",
                r"\bproduction\b|\bprod\b|\blive (?:site|system|environment)\b|\bproduktion\w*|\bproducci[oó]n\b|\bprodu[çc][ãa]o\b|\bproduzione\b|本番|生产环境|生產環境|운영 환경|프로덕션",
            ),
            (
                "staging",
                r"\bstaging\b|\bpre-?prod\w*|\bqa environment\b|ステージング|预发|스테이징",
            ),
            (
                "development",
                r"\bdev(?:elopment)? (?:environment|env|server|container|stack|setup|mode)\b|\bdevcontainer\b|\.devcontainer\b|\bapp_env=dev\b|\blocal(?:ly| dev\w*| development)\b|\bentorno de desarrollo\b|\bcontenedor de desarrollo\b|\bentwicklungsumgebung\b|開発環境|开发环境|本地|개발 환경",
            ),
        ],
    },
    // Who uses it: the public (API clients, customers) or the company's own people.
    ScopeDim {
        values: &[
            (
                "public and customer-facing",
                r"\bpublic (?:api|endpoints?|interfaces?|site|website)\b|\bexternal (?:api|endpoints?)\b|\bcustomer-facing\b|\bcustomer (?:apps?|forms?|portal|site)\b|\bthird-party clients\b|/v\d+/|\bkundenportal\w*|\bapplication client\b|\bportail client\b|\bportal del cliente\b|\bportal do cliente\b|对外接口|公開api|외부 api",
            ),
            (
                "internal and admin",
                r"\binternal (?:admin )?(?:api|endpoints?|services?|tools?|dashboards?|apps?)\b|/internal\b|/admin\b|\badmin (?:endpoints?|api|reports?|grid|panel|tools?|ui|app|console|area)\b|\bback[- ]?office\b|\badmin-(?:oberfläche|panel|tool)\w*|\binterne\w* (?:tools?|werkzeuge?)\b|\boutils? internes?\b|\boutils? d'administration\b|\bpanel de administración\b|\bherramientas internas\b|\bpainel (?:de )?admin\w*|\bferramentas internas\b|\byönetim panel\w*|\biç araç\w*|内部接口|内部api|内部工具|管理后台|社内ツール|管理画面|내부 api|내부 도구|관리자 페이지",
            ),
        ],
    },
    // Applications or published libraries.
    ScopeDim {
        values: &[
            (
                "applications",
                r"\bapplications\b|\bapps/|\bthe apps\b|\bservices/|\bdeployed services\b",
            ),
            (
                "libraries",
                r"\blibraries we publish\b|\bpublished (?:librar\w+|packages?)\b|\bpackages/|\blibrar(?:y|ies) (?:code|crates?|packages?)\b",
            ),
        ],
    },
    // Kind of branch.
    ScopeDim {
        values: &[
            (
                "feature branches",
                r"\bfeature[/ -](?:branch\w*|work|prs?)\b|\bfeature/|\bfeat/|\bpr de fonctionnalit\w+|\bfunktionsbranch\w*",
            ),
            (
                "release branches",
                r"\brelease[/ -]branch\w*|\brelease/|\brelease-\*",
            ),
            ("hotfix branches", r"\bhotfix(?:es)?\b|\bhotfix/"),
        ],
    },
    // Which platform.
    ScopeDim {
        values: &[
            (
                "mobile apps",
                r"\bmobile app\w*|\bios\b|\bandroid\b|\bapp store\b|\bgoogle play\b|\bmobilappen\b|\bapp móvil\b|\baplicativo\b|\bモバイル|\b모바일|移动端",
            ),
            (
                "web",
                r"\bweb ?apps?\b|\bweb app\w*|\bwebsite\b|\bwebbappen\b|\bin the browser\b|\bbrowser app\b|\bsitio web\b|\bsite web\b|网页|ウェブ",
            ),
        ],
    },
    // Request path or batch.
    ScopeDim {
        values: &[
            (
                "batch jobs",
                r"\bbatch\w*|\bcron ?jobs?\b|\bnightly jobs?\b|\bworkers?\b|\boffline\b|\bbackground jobs?\b|배치|バッチ|批处理",
            ),
            (
                "online services",
                r"\bonline (?:inference|serving|services?)\b|\brequest path\b|\bapi (?:servers?|services?|hosts?)\b|\bhttp (?:api )?servers?\b|\bweb services?\b|\breal-?time\b",
            ),
        ],
    },
    // Incident severity.
    ScopeDim {
        values: &[
            ("SEV1", r"\bsev ?-?1\b"),
            ("SEV2", r"\bsev ?-?2\b"),
            ("SEV3", r"\bsev ?-?3\b"),
            ("SEV4", r"\bsev ?-?4\b"),
        ],
    },
    // Which people: the staff, contractors, interns.
    ScopeDim {
        values: &[
            (
                "employees",
                r"\b(?:full-time |permanent )?employees?\b|\bfull-time (?:staff|hires?)\b|\bfestangestellte\w*|\bangestellte\w*|\bsalarié|\bempleados?\b|\bfuncionários?\b|\bdipendenti\b|\bwerknemers?\b|\banställda\b|\bpracowni\w*|\btam zamanl[ıi]|正式员工|正社員|정규직",
            ),
            (
                "contractors",
                r"\bcontractors?\b|\bfreelanc\w*|\bexternal (?:staff|consultants?|contributors?)\b|\bauftragnehmer\w*|\bexterne[nr]?\b|\bprestataires?\b|\bsous-traitants?\b|\bcontratistas?\b|\bautónomos?\b|\bprestadores?\b|\bterceirizados?\b|\bcollaboratori esterni\b|\bconsulenti\b|\bzzp'?ers?\b|\binhuurkrachten\b|\bkonsulter(?:na)?\b|\bfrilans\w*|\bpodwykonawc\w*|\byüklenici\w*|承包商|外包人员|合同工|業務委託|프리랜서|외주 인력",
            ),
            (
                "interns",
                r"\binterns?\b|\binternships?\b|\btrainees?\b|\bworking students?\b|\bpraktikant\w*|\bwerkstudent\w*|\bstagiaires?\b|\balternants?\b|\bbecari[oa]s?\b|\bestagiári[oa]s?\b|\bstagist[ie]\b|\bstagiairs?\b|\bstażyst\w*|\bstajyer\w*|实习生|インターン|인턴",
            ),
        ],
    },
];

pub(crate) const N_SCOPE_DIMS: usize = 16;

/// Pairs of words that oppose each other whatever the subject: a rule that says one and a rule
/// about the same thing that says the other conflict ("rebase *before* review" vs "squash
/// *after* review", "*one* large pull request" vs "a chain of *small* ones"). (A rule and its
/// exception, "every" vs "except", is not among them: on the development sets it joined rules
/// to compatible refinements more often than to exceptions that break them.) Matched as whole
/// words in each sentence (lower-cased); a sentence that says both says neither.
pub(crate) const ANTONYMS: &[(&str, &str)] = &[
    (
        r"\bbefore\b|\bprior to\b|\bvor\b|\bavant\b|\bantes\b|之前|以前|前に|전에",
        r"\bafter\b|\bonce\b|\bnach\b|\baprès\b|\bdespués\b|\bdepois\b|之后|以后|後に|후에",
    ),
    (
        r"\badd(?:s|ed|ing)?\b|\bintroduc\w*|\bhinzufüg\w*|\bajout\w*|\bañad\w*|\badicion\w*",
        r"\bremov\w*|\bdelet\w*|\bdrop(?:s|ped|ping)?\b|\bentfern\w*|\bsupprim\w*|\belimin\w*",
    ),
    (
        r"\benabl\w*|\bturn(?:s|ed)? on\b|\baktivier\w*|\bactiv\w*",
        r"\bdisabl\w*|\bturn(?:s|ed)? off\b|\bswitch(?:es|ed)? off\b|\bdeaktivier\w*|\bdésactiv\w*|\bdesactiv\w*",
    ),
    (
        r"\bmanual\w*|\bby hand\b|\bhand-written\b|\bhandwritten\b|\bà la main\b|\ba mano\b|\bvon hand\b|\bmanuell\w*|手动|手で|수동",
        r"\bautomat\w*|\bgenerat\w*|\bautomatisch\w*|自动|自動|자동",
    ),
    (
        r"\bsynchronous\w*|\bsync\b|\bblocking\b",
        r"\basynchronous\w*|\basync\b|\bnon-blocking\b|\bin the background\b",
    ),
    (
        r"\bsingle\b|\bone (?:big|large|single)\b|\bone pr\b|\bone pull request\b|\bone commit\b",
        r"\bmultiple\b|\bseveral\b|\bsmall(?:er)? (?:prs|pull requests|commits|mrs|changes)\b|\ba chain of\b|\bsplit\w*\b|\bstack(?:ed)?\b",
    ),
    (r"\bplural\b", r"\bsingular\b"),
    (r"\babsolute\b", r"\brelative\b"),
    (
        r"\binline\b|\binlined\b",
        r"\bseparate\b|\bexternal\b|\bextracted\b|\bin its own file\b",
    ),
    (r"\bexplicit\w*", r"\bimplicit\w*|\binferred\b"),
    (r"\bmutable\b", r"\bimmutable\b|\bread-only\b"),
    (
        r"\bupper-?case\b|\bcapitali[sz]\w*|\ball caps\b",
        r"\blower-?case\b",
    ),
    (
        r"\blocal(?:ly)?\b",
        r"\bremote(?:ly)?\b|\bin ci\b|\bon ci\b",
    ),
    (r"\bflat\b", r"\bnested\b|\bgrouped\b|\bsections?\b"),
    (r"\bstrict\w*", r"\blenient\w*|\bloose\w*|\bpermissive\w*"),
    (
        r"\bshort\w*|\bconcise\w*|\bbrief\w*|\bterse\w*",
        r"\bdetailed\b|\bverbose\b|\bin full\b|\bin detail\b|\blong(?:er)?\b",
    ),
    (
        r"\bcentral\w*|\bone place\b|\bin one file\b",
        r"\bco-?locat\w*|\bnext to\b|\bbeside\b|\balongside\b",
    ),
    (
        r"\bpin(?:s|ned|ning)?\b|\bexact versions?\b",
        r"\branges?\b|\bcaret\b|\bfloating\b|\blatest\b",
    ),
    (
        r"\bkeep(?:s|ing)?\b|\bretain\w*|\bpreserv\w*",
        r"\bsquash\w*|\bdiscard\w*|\bthrow away\b|\bpurg\w*",
    ),
];

/// The compiled tables.
pub(crate) struct Lexicon {
    cues: Option<AhoCorasick>,
    cue_kinds: Vec<Cue>,
    stop: HashSet<String>,
    generic: HashSet<String>,
    cjk_generic: HashSet<&'static str>,
    /// Spans that name no choice.
    pub not_choices: Vec<Regex>,
    /// Every choice pattern, for a quick first pass.
    pub concept_set: Option<RegexSet>,
    /// `concept_set` index -> (concept, choice, compiled pattern).
    pub concept_patterns: Vec<(usize, usize, Regex)>,
    pub contexts: Vec<Option<Regex>>,
    pub scope_set: Option<RegexSet>,
    /// `scope_set` index -> (dimension, value).
    pub scope_values: Vec<(usize, usize)>,
    /// The two sides of each pair of [`ANTONYMS`].
    pub antonyms: Vec<(Regex, Regex)>,
    /// A sentence that retires or bans what it names ([`RETIRED`]).
    pub retired: Option<Regex>,
    /// A Turkish verb negated by its suffix ([`TURKISH_NEGATIVE`]).
    turkish_negative: Option<Regex>,
    /// How many patterns failed to compile (zero; a test keeps it so).
    pub broken: usize,
}

/// Turkish verbs negated by their suffix: present (-mıyor), aorist (-maz), necessity (-mamalı),
/// imperative (-mayın), verbal noun (-mamak), each in both vowel harmonies. "geçmez" and "aşmaz"
/// ("does not exceed") state a bound, not a ban, and are left to the amounts.
const TURKISH_NEGATIVE: &str = r"\b\w{2,}(?:m[ıiuü]yor\w*|maz|mez|mazlar|mezler|mamal[ıi]\w*|memeli\w*|may[ıi]n[ıi]z|mey[ıi]n[ıi]z|may[ıi]n|mey[ıi]n|mamak|memek)(?:d[ıi]r|t[ıi]r)?\b";

/// Words that say a thing was given up or is banned as a whole: removed, replaced, shut down,
/// on the deny list. A sentence with one is firmer evidence against what it names than a
/// negation in passing ("never use `POST` for reads").
const RETIRED: &str = r"\b(?:remov(?:ed|ing)|retired|replaced|deprecated|superseded|decommissioned|uninstalled|phased out|sunset|dropped|abandoned|archived|obsolete|frozen|cancell?ed|(?:moved|migrated|migrating|switched) (?:away )?(?:off|from)|got rid of|no longer|banned|forbidden|prohibited|(?:deny|block|black)[- ]?list\w*|not (?:to )?adopt|being migrated|entfernt|abgeschafft|abgelöst|abgekündigt|eingestellt|veraltet|verboten|eliminad[oa]s?|reemplazad[oa]s?|sustituid[oa]s?|retirad[oa]s?|obsolet[oa]s?|prohibid[oa]s?|obsolètes?|interdite?s?|removid[oa]s?|substituíd[oa]s?|descontinuad[oa]s?|proibid[oa]s?|rimoss[oaie]|sostituit[oaie]|dismess[oaie]|deprecat[oaie]|vietat[oaie]|verwijderd|vervangen|afgeschaft|uitgefaseerd|verboden|usunięt\w*|usunięto|zastąpion\w*|wycofan\w*|zakazan\w*|togs bort|borttagen|borttagna|ersatt|ersattes|avvecklad\w*|förbjud\w*|kaldırılmıştır|yasak\w*|nicht mehr|ya no|niet meer|inte längre|już nie|artık)\b|\b(?:supprimé|remplacé|abandonné|kaldırıldı|non più)|不再|더 이상|移除|删除了|已删除|废弃|弃用|停用|下线|削除|廃止|非推奨|삭제|폐기|중단";

/// Gap between two words inside one sentence.
const GAP: &str = r"[^\w.;!?\n。！？；]+";

fn expand(p: &str) -> String {
    ascii_bounds(
        &p.replace("{W2}", "(?:{G}[\\w'-]+){0,2}{G}")
            .replace("{W}", "(?:{G}[\\w'-]+){0,4}{G}")
            .replace("{G}", GAP),
    )
}

/// A set of patterns, with room for its lazy DFA: with the default cache the DFA keeps being
/// rebuilt on short texts and the search falls back to a much slower engine.
fn build_set(patterns: &[String]) -> Option<RegexSet> {
    RegexSetBuilder::new(patterns)
        .dfa_size_limit(DFA_CACHE_BYTES)
        .build()
        .ok()
}

const DFA_CACHE_BYTES: usize = 16 << 20;

/// Word boundaries are ASCII ones: a Unicode `\b` makes the lazy DFA give up on non-ASCII text
/// (falling back to a much slower engine), and next to CJK text, which has no spaces, the ASCII
/// boundary is the right one ("用npm安装" names npm).
fn ascii_bounds(p: &str) -> String {
    p.replace("\\b", "(?-u:\\b)")
}

impl Lexicon {
    pub(crate) fn get() -> &'static Lexicon {
        static LEX: OnceLock<Lexicon> = OnceLock::new();
        LEX.get_or_init(Lexicon::build)
    }

    fn build() -> Lexicon {
        let mut broken = 0;
        // Curly apostrophes are folded to `'` before matching.
        let cue_patterns: Vec<&str> = CUES.iter().map(|(p, _)| *p).collect();
        let cues = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&cue_patterns)
            .ok();
        if cues.is_none() {
            broken += 1;
        }
        let cue_kinds = CUES.iter().map(|(_, k)| *k).collect();

        let stop: HashSet<String> = STOP_WORDS
            .iter()
            .flat_map(|w| [(*w).to_owned(), stem(w)])
            .collect();
        let generic: HashSet<String> = GENERIC_WORDS
            .iter()
            .flat_map(|w| [(*w).to_owned(), stem(w)])
            .chain(COMMON_TERMS.iter().map(|w| (*w).to_owned()))
            .collect();

        let mut set_patterns = Vec::new();
        let mut concept_patterns = Vec::new();
        let mut contexts = Vec::new();
        for (ci, c) in CONCEPTS.iter().enumerate() {
            contexts.push(c.context.and_then(|p| match Regex::new(&ascii_bounds(p)) {
                Ok(r) => Some(r),
                Err(_) => {
                    broken += 1;
                    None
                }
            }));
            for (hi, choice) in c.choices.iter().enumerate() {
                for p in choice.patterns {
                    let p = expand(p);
                    match Regex::new(&p) {
                        Ok(r) => {
                            set_patterns.push(p);
                            concept_patterns.push((ci, hi, r));
                        }
                        Err(_) => broken += 1,
                    }
                }
            }
        }
        let concept_set = build_set(&set_patterns);
        let not_choices = NOT_CHOICES
            .iter()
            .filter_map(|p| {
                let r = Regex::new(&ascii_bounds(p)).ok();
                if r.is_none() {
                    broken += 1;
                }
                r
            })
            .collect();
        if concept_set.is_none() {
            broken += 1;
        }

        let mut scope_patterns = Vec::new();
        let mut scope_values = Vec::new();
        for (di, d) in SCOPES.iter().enumerate() {
            for (vi, (_, p)) in d.values.iter().enumerate() {
                let p = ascii_bounds(p);
                if Regex::new(&p).is_ok() {
                    scope_patterns.push(p);
                    scope_values.push((di, vi));
                } else {
                    broken += 1;
                }
            }
        }
        let scope_set = build_set(&scope_patterns);
        if scope_set.is_none() {
            broken += 1;
        }

        let mut antonyms = Vec::new();
        for (x, y) in ANTONYMS {
            match (Regex::new(&ascii_bounds(x)), Regex::new(&ascii_bounds(y))) {
                (Ok(x), Ok(y)) => antonyms.push((x, y)),
                _ => broken += 1,
            }
        }

        let turkish_negative = Regex::new(TURKISH_NEGATIVE).ok();
        if turkish_negative.is_none() {
            broken += 1;
        }
        let retired = Regex::new(&ascii_bounds(RETIRED)).ok();
        if retired.is_none() {
            broken += 1;
        }

        Lexicon {
            turkish_negative,
            retired,
            antonyms,
            cues,
            cue_kinds,
            stop,
            generic,
            cjk_generic: CJK_GENERIC.iter().copied().collect(),
            not_choices,
            concept_set,
            concept_patterns,
            contexts,
            scope_set,
            scope_values,
            broken,
        }
    }

    /// Polarity cues in `lower` (already lower-cased): (start, end, cue), in order.
    pub(crate) fn cues(&self, lower: &str) -> Vec<(usize, usize, Cue)> {
        let Some(ac) = &self.cues else {
            return Vec::new();
        };
        let mut out = Vec::new();
        // A match inside a longer word ("go with" in "go without") is dropped and the search
        // goes on from its next character, so the cue it hid ("without") is still found.
        let mut at = 0;
        while at < lower.len() {
            let Some(m) = ac.find(aho_corasick::Input::new(lower).span(at..lower.len())) else {
                break;
            };
            let (s, e) = (m.start(), m.end());
            let pat = &lower[s..e];
            let before = lower[..s].chars().next_back();
            let after = lower[e..].chars().next();
            let first = pat.chars().next();
            let last = pat.chars().next_back();
            let word_start = first.is_some_and(is_latin_wordish);
            let word_end = last.is_some_and(is_latin_wordish);
            // "j'utilise", "n'utilisez": a cue after an elided French or Italian word stands.
            let elided = before == Some('\'') && after_elision(&lower[..s]);
            if word_start
                && !elided
                && before.is_some_and(|c| joins_word(c) || c == '.' || c == '/')
                || word_end && after.is_some_and(joins_word)
            {
                at = s + lower[s..].chars().next().map_or(1, char::len_utf8);
                continue;
            }
            if let Some(kind) = self.cue_kinds.get(m.pattern().as_usize()) {
                // French "ne … que" is "only", not a negation ("les tests ne tournent qu'en
                // CI").
                let kind = if pat == "ne" && restricts(&lower[e..]) {
                    BOTH_POS
                } else {
                    *kind
                };
                out.push((s, e, kind));
            }
            at = e.max(s + 1);
        }
        // Turkish negates the verb with a suffix ("kullanmıyoruz", "yapılmaz", "kullanmayın"):
        // the verb is the cue, and what comes before it (the object) is what it is about.
        if let Some(re) = &self.turkish_negative {
            for m in re.find_iter(lower) {
                let w = m.as_str();
                if !w.starts_with("geçme")
                    && !w.starts_with("aşma")
                    && !w.starts_with("aşmı")
                    && !out.iter().any(|&(a, b, _)| a < m.end() && m.start() < b)
                {
                    out.push((m.start(), m.end(), POST_NEG));
                }
            }
            out.sort_by_key(|&(a, _, _)| a);
        }
        out
    }

    /// Whether a sentence says that something without X fails ("PRs without a ticket are
    /// blocked", "alerts without runbook_url fail lint"): a requirement of X, not a rule
    /// against it.
    pub(crate) fn fails_without(&self, lower: &str) -> bool {
        static RE: OnceLock<Option<Regex>> = OnceLock::new();
        RE.get_or_init(|| {
            Regex::new(&ascii_bounds(
                r"\bwithout\b.{0,80}?\b(?:fail(?:s|ed)?|(?:are|is|get|gets) (?:rejected|refused|blocked|bounced)|cannot be merged|can't be merged|won't (?:pass|merge|build|deploy))\b",
            ))
            .ok()
        })
        .as_ref()
        .is_some_and(|r| r.is_match(lower))
    }

    pub(crate) fn is_stop(&self, word: &str) -> bool {
        self.stop.contains(word)
    }

    pub(crate) fn is_generic(&self, stem: &str) -> bool {
        self.generic.contains(stem)
    }

    pub(crate) fn is_cjk_generic(&self, bigram: &str) -> bool {
        self.cjk_generic.contains(bigram)
    }
}

/// A character that makes a Latin-script cue part of a larger word.
/// Whether the words after a French "ne" close it with "que" ("ne … que": only) before any word
/// that closes it as a negation ("pas", "jamais", "plus", …).
fn restricts(rest: &str) -> bool {
    for w in rest.split(|c: char| !(c.is_alphabetic() || c == '\'')) {
        match w {
            "pas" | "jamais" | "plus" | "rien" | "aucun" | "aucune" | "personne" | "guère"
            | "point" | "nulle" => return false,
            "que" => return true,
            _ if w.starts_with("qu'") => return true,
            _ => {}
        }
    }
    false
}

/// Elided French and Italian words with their apostrophe: stripped from the front of the word
/// they lean on (`analyze::tokenize`), and a cue after one still stands ("j'utilise").
pub(crate) const ELIDED: &[&str] = &[
    "l'", "d'", "j'", "qu'", "n'", "s'", "c'", "m'", "t'", "jusqu'", "lorsqu'", "puisqu'", "dell'",
    "dall'", "nell'", "sull'", "all'", "un'", "quest'", "quell'",
];

/// Whether `head` ends with an elided word of [`ELIDED`] that starts a word ("j'", "qu'",
/// "dell'").
fn after_elision(head: &str) -> bool {
    ELIDED.iter().any(|e| {
        head.strip_suffix(e)
            .is_some_and(|rest| !rest.chars().next_back().is_some_and(char::is_alphabetic))
    })
}

fn joins_word(c: char) -> bool {
    is_latin_wordish(c) || c == '_' || c == '-' || c == '\''
}

/// A letter or digit of a script written with spaces between words.
fn is_latin_wordish(c: char) -> bool {
    c.is_alphanumeric()
        && !super::analyze::is_cjk(c)
        && !super::analyze::is_hiragana(c)
        && !super::analyze::is_hangul(c)
}

/// Label of a concept.
pub(crate) fn concept_label(ci: usize) -> &'static str {
    CONCEPTS.get(ci).map_or("?", |c| c.label)
}

pub(crate) fn choice_label(ci: usize, hi: usize) -> &'static str {
    CONCEPTS
        .get(ci)
        .and_then(|c| c.choices.get(hi))
        .map_or("?", |h| h.label)
}

pub(crate) fn concept_exclusive(ci: usize) -> bool {
    CONCEPTS.get(ci).is_some_and(|c| c.exclusive)
}

/// The words of antonym pair `k` that two sentences use, to quote.
pub(crate) fn antonym_words(k: usize, a: &str, b: &str) -> (String, String) {
    let lex = Lexicon::get();
    let Some((x, y)) = lex.antonyms.get(k) else {
        return (String::new(), String::new());
    };
    let (la, lb) = (a.to_lowercase(), b.to_lowercase());
    let find = |r: &Regex, t: &str| r.find(t).map(|m| m.as_str().to_owned()).unwrap_or_default();
    if x.is_match(&la) {
        (find(x, &la), find(y, &lb))
    } else {
        (find(y, &la), find(x, &lb))
    }
}
