//! A Server-Sent Events parser (the WHATWG "event stream" format), fed the bytes of a stream as
//! they arrive, in chunks cut anywhere: `memsync watch` reads `GET …/events` with it.
//!
//! Lines end with CRLF, LF or CR (a CR at the end of one chunk and the LF starting the next are
//! one line end). A blank line dispatches the event gathered so far; `data:` lines are joined with
//! `\n`; `id:` sets the last event id, which stays for later events; `retry:` (digits only) is the
//! reconnection time the server asks for; a line starting with `:` is a comment (heartbeats).
//! A field with no colon is a field with an empty value; unknown fields are ignored. One space
//! after the colon is dropped. A byte-order mark at the start of the stream is ignored.

/// One thing the stream said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A dispatched event: its type (`message` when the server named none), its data, and the
    /// last event id at that point (None when no `id:` was seen yet).
    Event {
        event: String,
        data: String,
        id: Option<String>,
    },
    /// `retry: MS`.
    Retry(u64),
    /// A comment line's text (`: heartbeat` → `heartbeat`).
    Comment(String),
}

/// The longest line kept; a longer one is cut (a stream that never ends a line must not grow
/// memory without bound).
const MAX_LINE: usize = 1024 * 1024;

#[derive(Debug, Default)]
pub struct Parser {
    line: Vec<u8>,
    /// The previous chunk ended with CR: an LF starting this one is part of that line end.
    after_cr: bool,
    started: bool,
    event: String,
    data: String,
    has_data: bool,
    last_id: Option<String>,
}

impl Parser {
    pub fn new() -> Parser {
        Parser::default()
    }

    /// The id of the last event that carried one (for `Last-Event-ID` after a reconnect).
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// Takes the next bytes of the stream; returns what they completed.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Item> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut out);
                }
                b'\n' => self.end_line(&mut out),
                _ if self.line.len() < MAX_LINE => self.line.push(b),
                _ => {}
            }
        }
        out
    }

    fn end_line(&mut self, out: &mut Vec<Item>) {
        let mut line = std::mem::take(&mut self.line);
        if !self.started {
            self.started = true;
            if line.starts_with("\u{feff}".as_bytes()) {
                line.drain(..3);
            }
        }
        let line = String::from_utf8_lossy(&line).into_owned();
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if let Some(comment) = line.strip_prefix(':') {
            out.push(Item::Comment(
                comment.strip_prefix(' ').unwrap_or(comment).to_owned(),
            ));
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // An id holding NUL is ignored, as the standard says.
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|c| c.is_ascii_digit()) => {
                if let Ok(ms) = value.parse() {
                    out.push(Item::Retry(ms));
                }
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<Item>) {
        let event = std::mem::take(&mut self.event);
        let data = std::mem::take(&mut self.data);
        if !std::mem::take(&mut self.has_data) {
            // No data: nothing to dispatch (the event type is reset, the id stays).
            return;
        }
        out.push(Item::Event {
            event: if event.is_empty() {
                "message".into()
            } else {
                event
            },
            data,
            id: self.last_id.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str, id: Option<&str>) -> Item {
        Item::Event {
            event: event.into(),
            data: data.into(),
            id: id.map(Into::into),
        }
    }

    const STREAM: &str = "retry: 2000\n\nevent: revision\nid: 7\ndata: {\"project\":\"acme/api\",\"revision\":7}\n\n: heartbeat\n\nevent: review\ndata: {\"a\":1}\n\n";

    fn expected() -> Vec<Item> {
        vec![
            Item::Retry(2000),
            ev(
                "revision",
                "{\"project\":\"acme/api\",\"revision\":7}",
                Some("7"),
            ),
            Item::Comment("heartbeat".into()),
            // The id stays for later events that carry none.
            ev("review", "{\"a\":1}", Some("7")),
        ]
    }

    #[test]
    fn the_protocol_example_parses() {
        assert_eq!(Parser::new().feed(STREAM.as_bytes()), expected());
    }

    #[test]
    fn chunks_cut_anywhere_give_the_same_items() {
        let bytes = STREAM.as_bytes();
        for cut in 0..bytes.len() {
            let mut p = Parser::new();
            let mut items = p.feed(&bytes[..cut]);
            items.extend(p.feed(&bytes[cut..]));
            assert_eq!(items, expected(), "cut at {cut}");
        }
        // And one byte at a time, with CRLF and CR line ends.
        for ending in ["\r\n", "\r"] {
            let text = STREAM.replace('\n', ending);
            let mut p = Parser::new();
            let items: Vec<Item> = text.as_bytes().iter().flat_map(|b| p.feed(&[*b])).collect();
            assert_eq!(items, expected(), "ending {ending:?}");
            assert_eq!(p.last_id(), Some("7"));
        }
    }

    #[test]
    fn data_lines_join_and_odd_fields_follow_the_standard() {
        let mut p = Parser::new();
        let items = p.feed(
            "\u{feff}data:a\ndata: b\ndata\nfoo: bar\nretry: 1x\nid\n\nevent: only-type\n\n"
                .as_bytes(),
        );
        // "data" without a colon adds an empty line; "id" without a value sets an empty id;
        // "retry: 1x" is ignored; an event with no data is not dispatched.
        assert_eq!(items, vec![ev("message", "a\nb\n", Some(""))]);
        let items = p.feed(b"data: x\n\n");
        assert_eq!(items, vec![ev("message", "x", Some(""))]);
    }

    #[test]
    fn a_line_that_never_ends_is_bounded() {
        let mut p = Parser::new();
        let big = vec![b'a'; MAX_LINE * 2];
        assert!(p.feed(b"data: ").is_empty());
        assert!(p.feed(&big).is_empty());
        assert!(p.line.len() <= MAX_LINE);
        let items = p.feed(b"\n\n");
        assert!(matches!(&items[..], [Item::Event { data, .. }] if data.len() < MAX_LINE));
    }
}
