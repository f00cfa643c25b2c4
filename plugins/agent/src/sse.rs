//! Server-sent events, as the WHATWG spec parses them: lines end with LF,
//! CRLF or CR; `:` starts a comment (keepalives); `data:` lines add up until
//! a blank line ends the event. Bytes arrive in any pieces: an event, a line
//! or a UTF-8 character may be split across reads.

/// One event.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Event {
    /// The `event:` field; empty for the default `message`.
    pub event: String,
    pub data: String,
}

/// Turns bytes into events.
#[derive(Default)]
pub struct Parser {
    line: Vec<u8>,
    /// The last byte was a CR: an LF right after it ends no second line.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl Parser {
    /// Feeds bytes; returns the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.after_cr && b == b'\n' {
                self.after_cr = false;
                continue;
            }
            self.after_cr = b == b'\r';
            if b == b'\n' || b == b'\r' {
                let line = std::mem::take(&mut self.line);
                if let Some(event) = self.line_done(&line) {
                    out.push(event);
                }
            } else {
                self.line.push(b);
            }
        }
        out
    }

    /// The end of the stream: an event without its blank line still counts.
    pub fn finish(&mut self) -> Option<Event> {
        let line = std::mem::take(&mut self.line);
        let from_line = if line.is_empty() { None } else { self.line_done(&line) };
        from_line.or_else(|| self.line_done(b""))
    }

    fn line_done(&mut self, line: &[u8]) -> Option<Event> {
        if line.is_empty() {
            if !self.has_data {
                self.event.clear();
                return None;
            }
            self.has_data = false;
            return Some(Event { event: std::mem::take(&mut self.event), data: std::mem::take(&mut self.data) });
        }
        if line[0] == b':' {
            return None; // a comment
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.find(':') {
            Some(i) => (&line[..i], line[i + 1..].strip_prefix(' ').unwrap_or(&line[i + 1..])),
            None => (&line[..], ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {} // id, retry and unknown fields
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(pieces: &[&[u8]]) -> Vec<Event> {
        let mut p = Parser::default();
        let mut out: Vec<Event> = pieces.iter().flat_map(|piece| p.push(piece)).collect();
        out.extend(p.finish());
        out
    }

    #[test]
    fn events_split_anywhere() {
        let text = "event: a\ndata: {\"x\":\"é\"}\n\n: keepalive\n\ndata: 1\ndata: 2\r\n\r\ndata: [DONE]\n\n";
        let whole = all(&[text.as_bytes()]);
        assert_eq!(whole.len(), 3);
        assert_eq!(whole[0], Event { event: "a".into(), data: "{\"x\":\"é\"}".into() });
        assert_eq!(whole[1].data, "1\n2");
        assert_eq!(whole[2].data, "[DONE]");
        let bytes: Vec<&[u8]> = text.as_bytes().chunks(1).collect();
        assert_eq!(all(&bytes), whole);
    }

    #[test]
    fn the_last_event_without_a_blank_line() {
        assert_eq!(all(&[b"data: x"]), vec![Event { event: String::new(), data: "x".into() }]);
        assert_eq!(all(&[b": only a comment\n"]), vec![]);
    }
}
