//! The JSON forms of an external node's messages ([`JsonForm`]): any object with a
//! string `type` when every worker is external ([`Json`]), or a built-in algorithm's own
//! messages, flattened into one tagged object ([`Ref`]), read back by their variants'
//! names, which serde's derive gives up to a probe ([`enum_variants`]).

use std::fmt;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::algorithm::{fold, Message};

/// A message or timer tag of an external node: any JSON value (a message is an object
/// with a string `type`, which is its [`Message::kind`]). `serde_json::Value` is `Eq`
/// but not `Hash`, so it hashes its canonical text (object keys sorted).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Json(pub Value);

impl Hash for Json {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.to_string().hash(state);
    }
}

impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Message for Json {
    fn kind(&self) -> &str {
        self.0.get("type").and_then(Value::as_str).unwrap_or("JSON")
    }

    fn json(&self) -> Value {
        self.0.clone()
    }

    fn json_text(&self) -> String {
        self.0.to_string()
    }
}

/// How the messages of an external node look as JSON: any tagged object when every
/// worker is external ([`Json`]), the reference algorithm's messages in a mixed
/// cluster ([`Ref`]).
pub trait JsonForm: Message {
    /// The message as the program sees it.
    fn to_json(&self) -> Value;
    /// A message the program wrote, or why it is not one.
    fn from_json(value: Value) -> Result<Self, String>;
}

impl JsonForm for Json {
    fn to_json(&self) -> Value {
        self.0.clone()
    }

    fn from_json(value: Value) -> Result<Self, String> {
        if !value.get("type").is_some_and(Value::is_string) {
            return Err("a message must be an object with a string \"type\"".into());
        }
        Ok(Json(value))
    }
}

/// A built-in algorithm's message, as an external worker among that algorithm's own
/// workers sends and receives it. On the wire it is the message itself (so the
/// reference workers read it); as JSON, serde's form flattened into one object with a
/// `type` tag: the variant `Request { ticket: 4 }` of a message whose kind is `REQUEST`
/// is `{"type":"REQUEST","ticket":4}`, a unit variant `Reply` is `{"type":"REPLY"}`,
/// and a variant holding one value that is not a struct carries it as `value`. The tag
/// is the message's kind where it is the variant's name in other letters (`REQUEST`
/// for `Request`), else the variant's name; either is read back, in any case, with or
/// without `_` and `-`.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ref<M>(pub M);

impl<M: Message> Message for Ref<M> {
    fn kind(&self) -> &str {
        self.0.kind()
    }

    fn json(&self) -> Value {
        self.0.json()
    }

    fn json_text(&self) -> String {
        self.0.json_text()
    }
}

/// The variant names of the enum `M`, read from its `Deserialize`: serde hands them to
/// `deserialize_enum`, which this deserializer only records.
fn variants<M: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    enum_variants::<M>().unwrap_or(&[])
}

/// [`variants`], or `None` if `M` is not an enum.
pub(super) fn enum_variants<M: serde::de::DeserializeOwned>() -> Option<&'static [&'static str]> {
    use serde::de::{self, Visitor};
    struct Probe<'a>(&'a mut Option<&'static [&'static str]>);
    impl<'de> de::Deserializer<'de> for Probe<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not an enum"))
        }
        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _: &'static str,
            variants: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = Some(variants);
            Err(de::Error::custom("probed"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map struct identifier
            ignored_any
        }
    }
    let mut found = None;
    let _ = M::deserialize(Probe(&mut found));
    found
}

impl<M: Message> JsonForm for Ref<M> {
    fn to_json(&self) -> Value {
        self.0.json()
    }

    fn from_json(value: Value) -> Result<Self, String> {
        let Value::Object(mut obj) = value else {
            return Err("a message must be an object with a string \"type\"".into());
        };
        let Some(Value::String(tag)) = obj.remove("type") else {
            return Err("a message must be an object with a string \"type\"".into());
        };
        let names = variants::<M>();
        let Some(variant) = names.iter().find(|v| fold(v) == fold(&tag)) else {
            return Err(format!("`{tag}` is not a message of this algorithm (it has {})", names.join(", ")));
        };
        let mut tries = Vec::new();
        if obj.is_empty() {
            tries.push(Value::from(*variant));
        }
        if obj.len() == 1 && obj.contains_key("value") {
            tries.push(serde_json::json!({ *variant: obj["value"].clone() }));
        }
        tries.push(serde_json::json!({ *variant: Value::Object(obj) }));
        let mut why = String::new();
        for t in tries {
            match serde_json::from_value::<M>(t) {
                Ok(m) => return Ok(Ref(m)),
                Err(e) => why = e.to_string(),
            }
        }
        Err(format!("a `{tag}` of this algorithm cannot be made of it: {why}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algos::ricart_agrawala::Msg;
    use serde_json::json;
    #[test]
    fn ricart_agrawala_messages_have_the_documented_json_form() {
        assert_eq!(Ref(Msg::Request { ticket: 4 }).to_json(), json!({"type": "REQUEST", "ticket": 4}));
        assert_eq!(Ref(Msg::Reply).to_json(), json!({"type": "REPLY"}));
        for tag in ["REQUEST", "Request", "request"] {
            let m = Ref::<Msg>::from_json(json!({"type": tag, "ticket": 4})).unwrap();
            assert_eq!(m.0, Msg::Request { ticket: 4 });
        }
        assert_eq!(Ref::<Msg>::from_json(json!({"type": "REPLY"})).unwrap().0, Msg::Reply);
        let e = Ref::<Msg>::from_json(json!({"type": "GRANT"})).unwrap_err();
        assert!(e.contains("`GRANT` is not a message of this algorithm (it has Request, Reply)"), "{e}");
        let e = Ref::<Msg>::from_json(json!({"type": "REQUEST"})).unwrap_err();
        assert!(e.contains("missing field `ticket`"), "{e}");
        assert!(Ref::<Msg>::from_json(json!(["REQUEST"])).is_err());
    }

    #[test]
    fn json_messages_hash_alike_when_equal_and_need_a_type() {
        let hash = |j: &Json| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            j.hash(&mut h);
            h.finish()
        };
        let a = Json(json!({"type": "PING", "a": 1, "b": 2}));
        let b: Json = serde_json::from_str(r#"{"b":2,"a":1,"type":"PING"}"#).unwrap();
        assert_eq!(a, b);
        assert_eq!(hash(&a), hash(&b));
        assert_ne!(hash(&a), hash(&Json(json!({"type": "PING", "a": 1, "b": 3}))));
        assert_eq!(a.kind(), "PING");
        assert!(Json::from_json(json!({"kind": "PING"})).is_err());
        assert!(Json::from_json(json!({"type": 3})).is_err());
    }
}
