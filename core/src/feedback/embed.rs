//! An optional sentence-embedding model, run locally: what a memory means as a vector, so two
//! memories about one subject in different words are found as `related`.
//!
//! The model is a six-layer BERT encoder with mean pooling (the architecture of
//! `sentence-transformers/all-MiniLM-L6-v2`: 384 dimensions, an uncased WordPiece vocabulary).
//! Its weights are not part of memsync: an operator installs them from a package registry (see
//! `docs/protocol.md`) and points the server or the client at the directory that holds
//! `model.safetensors` and `vocab.txt` ([`Model::load_dir`]). Without them, the detector works
//! as before, and this module does nothing.
//!
//! The forward pass is plain Rust over `f32` (matrix products by `ndarray`, on
//! `matrixmultiply`), so the default build stays lean; a memory costs about 20 ms of CPU (a
//! release build on this project's 2-core CI machine), and [`embeddings`] keeps the vectors of
//! texts it has seen, so a process embeds each memory once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, GeneralCategoryGroup, UnicodeGeneralCategory};

/// Tokens read per memory at most, `[CLS]` and `[SEP]` included. Most memories are shorter;
/// a longer one is read by its first 64 tokens, which name its subject (on the development sets,
/// 64 and 128 find the same pairs).
const MAX_TOKENS: usize = 64;
/// Texts run through the model together: its weights are read once per batch.
const BATCH: usize = 32;
/// A word longer than this (in characters) is one unknown token, as in BERT's WordPiece.
const MAX_WORD_CHARS: usize = 100;
/// Vectors kept by [`embedding`] at most; past it, the cache starts over.
const CACHE_MAX: usize = 50_000;

/// Why a model could not be loaded; the text says which file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("model.safetensors is not a safetensors file ({0}); install the weights again")]
    Format(String),
    #[error(
        "model.safetensors lacks the tensor {0} (or it has another shape): it is not a six-layer, 384-dimension BERT sentence model such as all-MiniLM-L6-v2"
    )]
    Tensor(String),
    #[error("vocab.txt {0}")]
    Vocab(String),
}

struct Dense {
    /// Row-major `[out][in]`.
    w: Vec<f32>,
    b: Vec<f32>,
    out: usize,
    inp: usize,
}

struct Norm {
    w: Vec<f32>,
    b: Vec<f32>,
}

struct Layer {
    q: Dense,
    k: Dense,
    v: Dense,
    o: Dense,
    norm1: Norm,
    up: Dense,
    down: Dense,
    norm2: Norm,
}

/// A loaded sentence-embedding model.
pub struct Model {
    /// What identifies these weights (see [`Model::id`]).
    id: [u8; 32],
    vocab: HashMap<String, u32>,
    unk: u32,
    cls: u32,
    sep: u32,
    words: Vec<f32>,
    positions: Vec<f32>,
    token_type: Vec<f32>,
    norm: Norm,
    layers: Vec<Layer>,
    dim: usize,
    heads: usize,
    max_positions: usize,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("vocab", &self.vocab.len())
            .field("dim", &self.dim)
            .field("layers", &self.layers.len())
            .finish()
    }
}

type Tensors = HashMap<String, (Vec<usize>, Vec<f32>)>;

/// Removes the tensor `name` (or `bert.name`) of shape `shape` from `t`.
fn take(t: &mut Tensors, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
    let (s, v) = t
        .remove(name)
        .or_else(|| t.remove(&format!("bert.{name}")))
        .ok_or_else(|| ModelError::Tensor(name.to_owned()))?;
    if s != shape {
        return Err(ModelError::Tensor(format!(
            "{name} {shape:?} (it is {s:?})"
        )));
    }
    Ok(v)
}

fn dense(t: &mut Tensors, name: &str, out: usize, inp: usize) -> Result<Dense, ModelError> {
    Ok(Dense {
        w: take(t, &format!("{name}.weight"), &[out, inp])?,
        b: take(t, &format!("{name}.bias"), &[out])?,
        out,
        inp,
    })
}

fn norm(t: &mut Tensors, name: &str, dim: usize) -> Result<Norm, ModelError> {
    Ok(Norm {
        w: take(t, &format!("{name}.weight"), &[dim])?,
        b: take(t, &format!("{name}.bias"), &[dim])?,
    })
}

/// The tensors of a safetensors file: name → (shape, values), `F32` only.
fn tensors(bytes: &[u8]) -> Result<Tensors, ModelError> {
    let bad = |m: &str| ModelError::Format(m.to_owned());
    let len = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
        .ok_or_else(|| bad("shorter than its header"))?;
    let len = usize::try_from(len).map_err(|_| bad("header length out of range"))?;
    let header = bytes
        .get(8..8usize.saturating_add(len))
        .ok_or_else(|| bad("header past the end of the file"))?;
    let data = &bytes[8 + len..];
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(header).map_err(|e| bad(&format!("header: {e}")))?;
    let mut out = HashMap::new();
    for (name, t) in header {
        if name == "__metadata__" {
            continue;
        }
        let dtype = t.get("dtype").and_then(|d| d.as_str()).unwrap_or("");
        // A list of whole numbers of the header (`shape`, `data_offsets`).
        let numbers = |key: &str| -> Vec<usize> {
            t.get(key)
                .and_then(|s| s.as_array())
                .map(|s| {
                    s.iter()
                        .filter_map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
                        .collect()
                })
                .unwrap_or_default()
        };
        let shape = numbers("shape");
        let offsets = numbers("data_offsets");
        let [start, end] = offsets[..] else {
            return Err(bad(&format!("{name} has no data offsets")));
        };
        if dtype == "I64" {
            // `embeddings.position_ids`: the positions 0..n, not a weight.
            continue;
        }
        if dtype != "F32" {
            return Err(bad(&format!(
                "{name} is {dtype}, and only F32 weights are read"
            )));
        }
        let raw = data
            .get(start..end)
            .filter(|r| r.len() == 4 * shape.iter().product::<usize>())
            .ok_or_else(|| bad(&format!("{name}'s data does not match its shape")))?;
        let values = raw
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        out.insert(name, (shape, values));
    }
    Ok(out)
}

impl Model {
    /// Loads a model from the contents of its `model.safetensors` (F32 BERT weights, with or
    /// without a `bert.` prefix) and `vocab.txt` (one WordPiece token per line).
    pub fn load(safetensors: &[u8], vocab: &str) -> Result<Model, ModelError> {
        use sha2::Digest;
        let mut t = tensors(safetensors)?;
        // The weights' size, their first MiB (header and word embeddings) and the vocabulary:
        // enough to tell two models apart without hashing 90 MB at every start.
        let mut h = sha2::Sha256::new();
        h.update((safetensors.len() as u64).to_le_bytes());
        h.update(&safetensors[..safetensors.len().min(1 << 20)]);
        h.update(vocab.as_bytes());
        let id: [u8; 32] = h.finalize().into();
        let vocab: HashMap<String, u32> = vocab
            .lines()
            .enumerate()
            .map(|(i, l)| (l.trim_end_matches('\r').to_owned(), i as u32))
            .collect();
        let n_vocab = vocab.len();
        let token = |tok: &str| {
            vocab
                .get(tok)
                .copied()
                .ok_or_else(|| ModelError::Vocab(format!("lacks the token {tok}")))
        };
        let (unk, cls, sep) = (token("[UNK]")?, token("[CLS]")?, token("[SEP]")?);
        let dim = 384;
        let hidden = 1536;
        let (heads, n_layers, max_positions) = (12, 6, 512);
        let words = take(&mut t, "embeddings.word_embeddings.weight", &[n_vocab, dim])
            .map_err(|e| match e {
                ModelError::Tensor(m) => ModelError::Vocab(format!(
                    "does not match the model's word embeddings ({m}): use the vocab.txt that came with the weights"
                )),
                e => e,
            })?;
        let positions = take(
            &mut t,
            "embeddings.position_embeddings.weight",
            &[max_positions, dim],
        )?;
        let token_type = take(&mut t, "embeddings.token_type_embeddings.weight", &[2, dim])?;
        let norm_in = norm(&mut t, "embeddings.LayerNorm", dim)?;
        let mut layers = Vec::new();
        for l in 0..n_layers {
            let p = format!("encoder.layer.{l}.");
            layers.push(Layer {
                q: dense(&mut t, &format!("{p}attention.self.query"), dim, dim)?,
                k: dense(&mut t, &format!("{p}attention.self.key"), dim, dim)?,
                v: dense(&mut t, &format!("{p}attention.self.value"), dim, dim)?,
                o: dense(&mut t, &format!("{p}attention.output.dense"), dim, dim)?,
                norm1: norm(&mut t, &format!("{p}attention.output.LayerNorm"), dim)?,
                up: dense(&mut t, &format!("{p}intermediate.dense"), hidden, dim)?,
                down: dense(&mut t, &format!("{p}output.dense"), dim, hidden)?,
                norm2: norm(&mut t, &format!("{p}output.LayerNorm"), dim)?,
            });
        }
        Ok(Model {
            id,
            vocab,
            unk,
            cls,
            sep,
            words,
            positions,
            token_type,
            norm: norm_in,
            layers,
            dim,
            heads,
            max_positions,
        })
    }

    /// What identifies these weights: vectors kept from one model are no use with another.
    pub fn id(&self) -> [u8; 32] {
        self.id
    }

    /// The length of its vectors.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Loads the model in `dir`: its `model.safetensors` and `vocab.txt` (the layout of a
    /// sentence-transformers model directory). The error names the file and what is wrong.
    pub fn load_dir(dir: &std::path::Path) -> Result<Model, String> {
        let read = |name: &str| {
            std::fs::read(dir.join(name)).map_err(|e| {
                format!(
                    "cannot read {}: {e}; the directory must hold the model's model.safetensors and vocab.txt",
                    dir.join(name).display()
                )
            })
        };
        let weights = read("model.safetensors")?;
        let vocab = String::from_utf8(read("vocab.txt")?)
            .map_err(|_| format!("{} is not UTF-8 text", dir.join("vocab.txt").display()))?;
        Model::load(&weights, &vocab).map_err(|e| format!("{}: {e}", dir.display()))
    }

    /// The WordPiece token ids of `text` (BERT's uncased tokenizer: control characters dropped,
    /// CJK ideographs split apart, lower-cased, accents stripped, split at whitespace and
    /// punctuation), with `[CLS]` and `[SEP]`, at most 64 (`MAX_TOKENS`).
    pub fn tokens(&self, text: &str) -> Vec<u32> {
        let mut out = vec![self.cls];
        'words: for word in pre_tokens(text) {
            let chars: Vec<char> = word.chars().collect();
            let mut pieces = Vec::new();
            if chars.len() > MAX_WORD_CHARS {
                pieces.push(self.unk);
            } else {
                let mut start = 0;
                while start < chars.len() {
                    let mut end = chars.len();
                    let mut found = None;
                    while end > start {
                        let mut piece: String = chars[start..end].iter().collect();
                        if start > 0 {
                            piece.insert_str(0, "##");
                        }
                        if let Some(&id) = self.vocab.get(&piece) {
                            found = Some(id);
                            break;
                        }
                        end -= 1;
                    }
                    match found {
                        Some(id) => {
                            pieces.push(id);
                            start = end;
                        }
                        None => {
                            pieces = vec![self.unk];
                            break;
                        }
                    }
                }
            }
            for p in pieces {
                if out.len() == MAX_TOKENS - 1 {
                    break 'words;
                }
                out.push(p);
            }
        }
        out.push(self.sep);
        out
    }

    /// The unit-length embedding of `text` (the mean of the last layer over its tokens).
    pub fn embed(&self, text: &str) -> Vec<f32> {
        self.embed_batch(&[text]).pop().unwrap_or_default()
    }

    /// The embeddings of `texts`, run through the model together.
    pub fn embed_batch(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let d = self.dim;
        // Every text's tokens, one after the other: the dense layers read all rows at once,
        // attention stays within each text.
        let mut spans: Vec<(usize, usize)> = Vec::with_capacity(texts.len());
        let mut x: Vec<f32> = Vec::new();
        for text in texts {
            let ids = self.tokens(text);
            let n = ids.len().min(self.max_positions);
            let start = x.len() / d;
            for (i, &id) in ids.iter().take(n).enumerate() {
                let word = &self.words[id as usize * d..(id as usize + 1) * d];
                let pos = &self.positions[i * d..(i + 1) * d];
                x.extend((0..d).map(|j| word[j] + pos[j] + self.token_type[j]));
            }
            spans.push((start, n));
        }
        let rows = x.len() / d;
        layer_norm(&mut x, d, &self.norm);
        let dh = d / self.heads;
        let scale = 1.0 / (dh as f32).sqrt();
        let longest = spans.iter().map(|s| s.1).max().unwrap_or(0);
        let mut scores = vec![0f32; longest * longest];
        for l in &self.layers {
            let q = l.q.apply(&x, rows);
            let k = l.k.apply(&x, rows);
            let v = l.v.apply(&x, rows);
            let mut ctx = vec![0f32; rows * d];
            for &(start, n) in &spans {
                let at = start * d;
                let scores = &mut scores[..n * n];
                for h in 0..self.heads {
                    let off = at + h * dh;
                    // scores = q_h · k_hᵀ, scaled
                    gemm(
                        n,
                        dh,
                        n,
                        (&q[off..], d, 1),
                        (&k[off..], 1, d),
                        (scores, n, 1),
                        scale,
                        0.0,
                    );
                    for row in scores.chunks_exact_mut(n) {
                        softmax(row);
                    }
                    // context_h = scores · v_h
                    gemm(
                        n,
                        n,
                        dh,
                        (scores, n, 1),
                        (&v[off..], d, 1),
                        (&mut ctx[off..], d, 1),
                        1.0,
                        0.0,
                    );
                }
            }
            let attended = l.o.apply(&ctx, rows);
            for (xi, ai) in x.iter_mut().zip(&attended) {
                *xi += ai;
            }
            layer_norm(&mut x, d, &l.norm1);
            let mut up = l.up.apply(&x, rows);
            for u in &mut up {
                *u = gelu(*u);
            }
            let down = l.down.apply(&up, rows);
            for (xi, di) in x.iter_mut().zip(&down) {
                *xi += di;
            }
            layer_norm(&mut x, d, &l.norm2);
        }
        spans
            .iter()
            .map(|&(start, n)| {
                let mut mean = vec![0f32; d];
                for row in x[start * d..(start + n) * d].chunks_exact(d) {
                    for (m, v) in mean.iter_mut().zip(row) {
                        *m += v;
                    }
                }
                let norm = mean.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
                for m in &mut mean {
                    *m /= norm;
                }
                mean
            })
            .collect()
    }
}

impl Dense {
    /// `x · wᵀ + b` for `n` rows of `x`.
    fn apply(&self, x: &[f32], n: usize) -> Vec<f32> {
        let mut out = Vec::with_capacity(n * self.out);
        for _ in 0..n {
            out.extend_from_slice(&self.b);
        }
        // out += x[n×in] · wᵀ[in×out]; wᵀ is w read with swapped strides.
        gemm(
            n,
            self.inp,
            self.out,
            (x, self.inp, 1),
            (&self.w, 1, self.inp),
            (&mut out, self.out, 1),
            1.0,
            1.0,
        );
        out
    }
}

type Operand<'a> = (&'a [f32], usize, usize);

/// `c = alpha · a·b + beta · c` for an `m×k` `a` and a `k×n` `b`, each given with its row and
/// column strides.
#[allow(clippy::too_many_arguments)]
fn gemm(
    m: usize,
    k: usize,
    n: usize,
    (a, rsa, csa): Operand<'_>,
    (b, rsb, csb): Operand<'_>,
    (c, rsc, csc): (&mut [f32], usize, usize),
    alpha: f32,
    beta: f32,
) {
    use ndarray::ShapeBuilder;
    let a = view(a, m, k, rsa, csa);
    let b = view(b, k, n, rsb, csb);
    let need = extent(m, n, rsc, csc);
    let mut c = ndarray::ArrayViewMut2::from_shape((m, n).strides((rsc, csc)), &mut c[..need])
        .expect("the strides stay inside the slice");
    ndarray::linalg::general_mat_mul(alpha, &a, &b, beta, &mut c);
}

/// How many values a `rows × cols` matrix with these strides reaches.
fn extent(rows: usize, cols: usize, rs: usize, cs: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        (rows - 1) * rs + (cols - 1) * cs + 1
    }
}

fn view(s: &[f32], rows: usize, cols: usize, rs: usize, cs: usize) -> ndarray::ArrayView2<'_, f32> {
    use ndarray::ShapeBuilder;
    ndarray::ArrayView2::from_shape(
        (rows, cols).strides((rs, cs)),
        &s[..extent(rows, cols, rs, cs)],
    )
    .expect("the strides stay inside the slice")
}

fn layer_norm(x: &mut [f32], d: usize, norm: &Norm) {
    for row in x.chunks_exact_mut(d) {
        let mean = row.iter().sum::<f32>() / d as f32;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / d as f32;
        let inv = 1.0 / (var + 1e-12).sqrt();
        for ((v, w), b) in row.iter_mut().zip(&norm.w).zip(&norm.b) {
            *v = (*v - mean) * inv * w + b;
        }
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    for v in row.iter_mut() {
        *v /= sum;
    }
}

/// GELU with the error function (as BERT is trained), erf by Abramowitz and Stegun 7.1.26
/// (error under 1.5e-7).
fn gelu(x: f32) -> f32 {
    let z = f64::from(x) / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = (1.0 - poly * (-z * z).exp()).copysign(z);
    (0.5 * f64::from(x) * (1.0 + erf)) as f32
}

fn is_cjk(c: char) -> bool {
    matches!(u32::from(c),
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

fn is_punctuation(c: char) -> bool {
    matches!(u32::from(c), 33..=47 | 58..=64 | 91..=96 | 123..=126)
        || c.general_category_group() == GeneralCategoryGroup::Punctuation
}

/// BERT's basic tokenizer: the words and punctuation marks of `text`, normalised.
fn pre_tokens(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            out.push(std::mem::take(word));
        }
    };
    for c in text.chars() {
        if c == '\0' || c == '\u{FFFD}' {
            continue;
        }
        if c.is_whitespace() {
            flush(&mut word, &mut out);
            continue;
        }
        if c.is_control() {
            continue;
        }
        if is_cjk(c) {
            flush(&mut word, &mut out);
            out.push(c.to_string());
            continue;
        }
        for l in c.to_lowercase().nfd() {
            if l.general_category() == GeneralCategory::NonspacingMark {
                continue;
            }
            if is_punctuation(l) {
                flush(&mut word, &mut out);
                out.push(l.to_string());
            } else {
                word.push(l);
            }
        }
    }
    flush(&mut word, &mut out);
    out
}

/// The cosine of two unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

static MODEL: OnceLock<Model> = OnceLock::new();
/// The vectors kept, by the SHA-256 of their text, each with whether this process used it.
type Cache = Mutex<HashMap<[u8; 32], (Arc<[f32]>, bool)>>;
static CACHE: OnceLock<Cache> = OnceLock::new();

/// Makes `model` the one the feedback check uses in this process (servers and clients install
/// it once, at start). Returns false when one was installed already.
pub fn install(model: Model) -> bool {
    MODEL.set(model).is_ok()
}

/// Whether a model is installed.
pub fn installed() -> bool {
    MODEL.get().is_some()
}

/// The embeddings of `texts` by the installed model (None without one), from the cache for the
/// texts this process embedded before; the others in batches, on as many threads as the
/// machine has cores (at most 8).
pub fn embeddings(texts: &[&str]) -> Option<Vec<Arc<[f32]>>> {
    use sha2::Digest;
    let model = MODEL.get()?;
    let keys: Vec<[u8; 32]> = texts
        .iter()
        .map(|t| sha2::Sha256::digest(t.as_bytes()).into())
        .collect();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut out: Vec<Option<Arc<[f32]>>> = {
        let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
        keys.iter()
            .map(|k| {
                c.get_mut(k).map(|(v, used)| {
                    *used = true;
                    v.clone()
                })
            })
            .collect()
    };
    // The texts not cached, each once.
    let mut todo: Vec<usize> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, v) in out.iter().enumerate() {
        if v.is_none() && seen.insert(keys[i]) {
            todo.push(i);
        }
    }
    if !todo.is_empty() {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 8)
            .min(todo.len().div_ceil(BATCH));
        let per_thread = todo.len().div_ceil(threads);
        let made: Vec<(usize, Vec<f32>)> = std::thread::scope(|s| {
            let workers: Vec<_> = todo
                .chunks(per_thread)
                .map(|part| {
                    s.spawn(move || {
                        let mut made = Vec::with_capacity(part.len());
                        for batch in part.chunks(BATCH) {
                            let batch_texts: Vec<&str> = batch.iter().map(|&i| texts[i]).collect();
                            made.extend(batch.iter().copied().zip(model.embed_batch(&batch_texts)));
                        }
                        made
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().expect("an embedding thread panicked"))
                .collect()
        });
        let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
        if c.len() + made.len() > CACHE_MAX {
            c.clear();
        }
        for (i, v) in made {
            let v: Arc<[f32]> = v.into();
            c.insert(keys[i], (v.clone(), true));
            out[i] = Some(v);
        }
        // Repeated texts take the vector of their first copy.
        for i in 0..out.len() {
            if out[i].is_none() {
                out[i] = c.get(&keys[i]).map(|(v, _)| v.clone());
            }
        }
    }
    out.into_iter().collect()
}

/// The installed model's [`Model::id`] and vector length (None without a model).
pub fn installed_id() -> Option<([u8; 32], usize)> {
    MODEL.get().map(|m| (m.id, m.dim))
}

/// Vectors kept elsewhere (a client's cache file) for the installed model's texts, by the
/// SHA-256 of each text: [`embeddings`] takes them instead of running the model. Vectors of
/// another length are ignored. Nothing without a model.
pub fn preload(vectors: impl IntoIterator<Item = ([u8; 32], Vec<f32>)>) {
    let Some(model) = MODEL.get() else { return };
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
    for (key, v) in vectors {
        if v.len() == model.dim && c.len() < CACHE_MAX {
            c.entry(key).or_insert((v.into(), false));
        }
    }
}

/// The vectors this process used (embedded or preloaded and asked for), by the SHA-256 of their
/// text, to keep for the next process; in no particular order.
pub fn used() -> Vec<([u8; 32], Arc<[f32]>)> {
    let Some(cache) = CACHE.get() else {
        return Vec::new();
    };
    let c = cache.lock().unwrap_or_else(|e| e.into_inner());
    c.iter()
        .filter(|(_, (_, used))| *used)
        .map(|(k, (v, _))| (*k, v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_basic_tokenizer_splits_punctuation_and_ideographs_and_strips_accents() {
        assert_eq!(
            pre_tokens("Élan: don't  use `date-fns`!\t数据库 OK"),
            [
                "elan", ":", "don", "'", "t", "use", "`", "date", "-", "fns", "`", "!", "数", "据",
                "库", "ok"
            ]
        );
    }

    #[test]
    fn gelu_matches_the_error_function() {
        // GELU(x) = x·Φ(x): Φ(1) = 0.841345, Φ(-1) = 0.158655, Φ(2) = 0.977250.
        for (x, want) in [
            (1.0f32, 0.841_345f32),
            (-1.0, -0.158_655),
            (2.0, 1.954_5),
            (0.0, 0.0),
        ] {
            assert!((gelu(x) - want).abs() < 1e-5, "{x}: {}", gelu(x));
        }
    }

    #[test]
    fn a_file_that_is_not_safetensors_is_refused_with_the_reason() {
        let e = Model::load(b"abc", "[UNK]\n[CLS]\n[SEP]\n").unwrap_err();
        assert!(e.to_string().contains("shorter than its header"), "{e}");
        let mut f = 2u64.to_le_bytes().to_vec();
        f.extend_from_slice(b"{}");
        let e = Model::load(&f, "[PAD]\n").unwrap_err();
        assert!(e.to_string().contains("lacks the token [UNK]"), "{e}");
        let e = Model::load(&f, "[UNK]\n[CLS]\n[SEP]\n").unwrap_err();
        assert!(e.to_string().contains("word embeddings"), "{e}");
    }
}
