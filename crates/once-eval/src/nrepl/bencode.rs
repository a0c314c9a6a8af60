//! Bencode, the encoding of nREPL messages: integers, byte strings, lists and dictionaries.
//!
//! The decoder reads one value from a stream and must never trust a length it reads: strings
//! and nesting are bounded, so a hostile or broken server cannot make `once` allocate without
//! limit or recurse off its stack.

use std::collections::BTreeMap;
use std::io::{self, BufRead};

/// The longest byte string accepted (a huge evaluation result is cut by the server long before).
const MAX_STRING: usize = 64 << 20;
/// The deepest nesting accepted.
const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Int(i64),
    Bytes(Vec<u8>),
    List(Vec<Value>),
    Dict(BTreeMap<Vec<u8>, Value>),
}

impl Value {
    pub(crate) fn text(text: &str) -> Value {
        Value::Bytes(text.as_bytes().to_vec())
    }

    pub(crate) fn as_text(&self) -> Option<String> {
        match self {
            Value::Bytes(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
            _ => None,
        }
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Value::Int(n) => out.extend_from_slice(format!("i{n}e").as_bytes()),
            Value::Bytes(bytes) => {
                out.extend_from_slice(format!("{}:", bytes.len()).as_bytes());
                out.extend_from_slice(bytes);
            }
            Value::List(items) => {
                out.push(b'l');
                for item in items {
                    item.encode(out);
                }
                out.push(b'e');
            }
            Value::Dict(entries) => {
                // BTreeMap keeps keys sorted, as bencode requires.
                out.push(b'd');
                for (key, value) in entries {
                    Value::Bytes(key.clone()).encode(out);
                    value.encode(out);
                }
                out.push(b'e');
            }
        }
    }
}

/// Reads one value; `Ok(None)` at a clean end of stream.
pub(crate) fn decode(input: &mut impl BufRead) -> io::Result<Option<Value>> {
    let Some(first) = peek(input)? else {
        return Ok(None);
    };
    value(input, first, 0).map(Some)
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("bad bencode: {what}"))
}

fn peek(input: &mut impl BufRead) -> io::Result<Option<u8>> {
    Ok(input.fill_buf()?.first().copied())
}

fn byte(input: &mut impl BufRead) -> io::Result<u8> {
    let byte = peek(input)?.ok_or_else(|| invalid("the stream ended inside a value"))?;
    input.consume(1);
    Ok(byte)
}

fn value(input: &mut impl BufRead, first: u8, depth: usize) -> io::Result<Value> {
    if depth > MAX_DEPTH {
        return Err(invalid("nested too deeply"));
    }
    match first {
        b'i' => {
            input.consume(1);
            let digits = until(input, b'e')?;
            let text = std::str::from_utf8(&digits).map_err(|_| invalid("integer"))?;
            text.parse().map(Value::Int).map_err(|_| invalid("integer"))
        }
        b'0'..=b'9' => bytes(input).map(Value::Bytes),
        b'l' => {
            input.consume(1);
            let mut items = Vec::new();
            loop {
                match peek(input)? {
                    Some(b'e') => {
                        input.consume(1);
                        return Ok(Value::List(items));
                    }
                    Some(next) => items.push(value(input, next, depth + 1)?),
                    None => return Err(invalid("the stream ended inside a list")),
                }
            }
        }
        b'd' => {
            input.consume(1);
            let mut entries = BTreeMap::new();
            loop {
                match peek(input)? {
                    Some(b'e') => {
                        input.consume(1);
                        return Ok(Value::Dict(entries));
                    }
                    Some(b'0'..=b'9') => {
                        let key = bytes(input)?;
                        let next = peek(input)?.ok_or_else(|| invalid("a key without a value"))?;
                        entries.insert(key, value(input, next, depth + 1)?);
                    }
                    Some(_) => return Err(invalid("a dictionary key that is not a string")),
                    None => return Err(invalid("the stream ended inside a dictionary")),
                }
            }
        }
        _ => Err(invalid("unexpected byte")),
    }
}

fn until(input: &mut impl BufRead, end: u8) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let next = byte(input)?;
        if next == end {
            return Ok(out);
        }
        if out.len() > 20 {
            return Err(invalid("a number that is too long"));
        }
        out.push(next);
    }
}

fn bytes(input: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let digits = until(input, b':')?;
    let length: usize = std::str::from_utf8(&digits)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| invalid("string length"))?;
    if length > MAX_STRING {
        return Err(invalid("a string that is too long"));
    }
    let mut out = vec![0; length];
    input.read_exact(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_bad_input_is_refused() {
        let message = Value::Dict(BTreeMap::from([
            (b"op".to_vec(), Value::text("eval")),
            (b"id".to_vec(), Value::Int(-3)),
            (
                b"status".to_vec(),
                Value::List(vec![Value::text("done"), Value::text("ünï")]),
            ),
        ]));
        let mut wire = Vec::new();
        message.encode(&mut wire);
        assert!(wire.starts_with(b"d2:idi-3e2:op4:eval6:statusl4:done"));
        let mut twice = wire.clone();
        twice.extend_from_slice(&wire);
        let mut input = &twice[..];
        assert_eq!(decode(&mut input).unwrap(), Some(message.clone()));
        assert_eq!(decode(&mut input).unwrap(), Some(message));
        assert_eq!(decode(&mut input).unwrap(), None);
        for bad in [
            &b"d3:abc"[..],
            b"i12",
            b"99999999999999:x",
            b"x",
            b"di1e1:ae",
        ] {
            assert!(decode(&mut &bad[..]).is_err(), "{bad:?}");
        }
    }
}
