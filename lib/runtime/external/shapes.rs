//! The shapes of an algorithm's messages as a program sees them ([`MessageShape`]),
//! traced from the message enum's own serde derive (`serde-reflection`), so that the
//! protocol's documentation cannot drift from the code.

use serde::Serialize;
use serde_json::Value;

use crate::algorithm::{fold, Message};

use super::json::{enum_variants, JsonForm, Ref};

/// One message type of an algorithm as a program sees it ([`Ref`]'s JSON form), read
/// from the message enum's own serde derive (traced by `serde-reflection`), so that the
/// protocol's documentation cannot drift from the code.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MessageShape {
    /// The JSON `type`: the message's kind (`REQUEST`), or else its variant's name.
    #[serde(rename = "type")]
    pub tag: String,
    /// The Rust variant, e.g. `Request`.
    pub variant: String,
    /// Every field beside `type`, in declaration order, with its JSON type
    /// (`u64`, `[u32]`, `{"epoch":u64,"id":u32}`, `u32 | null`).
    pub fields: Vec<FieldShape>,
    /// A message of this type as the worker writes it, with zeros and empty lists:
    /// what [`Ref::to_json`] makes of a value of the variant, read back by
    /// [`Ref::from_json`].
    pub example: Value,
}

/// A field of a [`MessageShape`].
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FieldShape {
    /// The field's name in the JSON object.
    pub name: String,
    /// Its JSON type, as [`MessageShape::fields`] writes it.
    #[serde(rename = "type")]
    pub ty: String,
}

impl MessageShape {
    /// The object in one line with each field's type for its value:
    /// `{"type":"REQUEST","stamp":u64}`.
    pub fn shape(&self) -> String {
        let mut s = format!("{{\"type\":\"{}\"", self.tag);
        for f in &self.fields {
            s.push_str(&format!(",\"{}\":{}", f.name, f.ty));
        }
        s.push('}');
        s
    }
}

/// The enums a message type holds (`Status` in `Msg::Status { status: Status }`), as a
/// tuple: `()`, `(Status,)`, `(A, B)`. The tracer meets one variant of a nested enum
/// per message that holds it, so each is traced whole first
/// ([`message_shapes_with`]); one left out is an error that names it, never a
/// shape with variants missing.
pub trait Nested {
    /// Trace each type of the tuple into `tracer`.
    fn trace(
        tracer: &mut serde_reflection::Tracer,
        samples: &serde_reflection::Samples,
    ) -> Result<(), String>;
}

macro_rules! nested {
    ($($t:ident),*) => {
        impl<$($t: serde::de::DeserializeOwned),*> Nested for ($($t,)*) {
            #[allow(unused_variables)]
            fn trace(
                tracer: &mut serde_reflection::Tracer,
                samples: &serde_reflection::Samples,
            ) -> Result<(), String> {
                $(tracer.trace_type::<$t>(samples).map_err(|e| e.to_string())?;)*
                Ok(())
            }
        }
    };
}
nested!();
nested!(A);
nested!(A, B);
nested!(A, B, C);

/// Every message type of `M`, in declaration order, traced from its `Deserialize`
/// ([`message_shapes_with`] for a message type that holds enums of its own).
pub fn message_shapes<M: Message>() -> Result<Vec<MessageShape>, String> {
    message_shapes_with::<M, ()>()
}

/// Every message type of `M`, in declaration order, traced from its `Deserialize`,
/// the enums it holds ([`Nested`]) traced whole first. An enum without variants (the
/// baselines send nothing) has none. `Err` says why a type cannot be traced (a
/// nested enum not named in `T`, a hand-written `Deserialize` that checks its input)
/// or why a traced example does not read back as itself.
pub fn message_shapes_with<M: Message, T: Nested>() -> Result<Vec<MessageShape>, String> {
    use serde_reflection::{ContainerFormat, Format, Samples, Tracer, TracerConfig, VariantFormat};
    match enum_variants::<M>() {
        None => return Err("the message type is not an enum".into()),
        Some([]) => return Ok(Vec::new()),
        Some(_) => {}
    }
    let samples = Samples::new();
    let mut tracer = Tracer::new(TracerConfig::default());
    T::trace(&mut tracer, &samples)?;
    let (format, values) = tracer.trace_type::<M>(&samples).map_err(|e| e.to_string())?;
    let registry = tracer.registry().map_err(|e| {
        format!(
            "{e} (name the enums it holds: `messages: message_shapes_with::<Msg, (Status,)>` in its entry)"
        )
    })?;
    let Format::TypeName(name) = format else { return Err("the message type is not an enum".into()) };
    let Some(ContainerFormat::Enum(variants)) = registry.get(&name) else {
        return Err(format!("the message type {name} is not an enum"));
    };
    let mut shapes = Vec::new();
    for value in values {
        let example = Ref(value.clone()).to_json();
        let tag = example.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
        let Some(v) = variants.values().find(|v| fold(&v.name) == fold(&tag)) else {
            return Err(format!("no variant of {name} has the tag {tag}"));
        };
        let fields = match &v.value {
            VariantFormat::Unit => Vec::new(),
            VariantFormat::Struct(fields) => fields
                .iter()
                .map(|f| FieldShape { name: f.name.clone(), ty: json_type(&f.value, &registry, 0) })
                .collect(),
            VariantFormat::NewType(f) => match &**f {
                // A struct inside is flattened beside `type` (see `Ref`).
                Format::TypeName(t) if matches!(registry.get(t), Some(ContainerFormat::Struct(_))) => {
                    let Some(ContainerFormat::Struct(fields)) = registry.get(t) else { unreachable!() };
                    fields
                        .iter()
                        .map(|f| FieldShape { name: f.name.clone(), ty: json_type(&f.value, &registry, 0) })
                        .collect()
                }
                other => vec![FieldShape { name: "value".into(), ty: json_type(other, &registry, 0) }],
            },
            VariantFormat::Tuple(fs) => {
                let tys: Vec<String> = fs.iter().map(|f| json_type(f, &registry, 0)).collect();
                vec![FieldShape { name: "value".into(), ty: format!("[{}]", tys.join(",")) }]
            }
            VariantFormat::Variable(_) => return Err(format!("{name}::{} could not be traced", v.name)),
        };
        match Ref::<M>::from_json(example.clone()) {
            Ok(back) if back.0 == value => {}
            Ok(back) => return Err(format!("{example} reads back as {:?}, not {value:?}", back.0)),
            Err(e) => return Err(format!("{example} does not read back: {e}")),
        }
        shapes.push(MessageShape { tag, variant: v.name.clone(), fields, example });
    }
    Ok(shapes)
}

/// A traced format as a JSON type, for [`FieldShape::ty`]: numbers by their Rust type,
/// lists in brackets, objects in braces, alternatives joined by `|`.
fn json_type(f: &serde_reflection::Format, reg: &serde_reflection::Registry, depth: usize) -> String {
    use serde_reflection::{ContainerFormat as C, Format as F, VariantFormat as V};
    let ty = |f: &F| json_type(f, reg, depth + 1);
    let object = |fields: &[serde_reflection::Named<F>]| {
        let inner: Vec<String> = fields.iter().map(|f| format!("\"{}\":{}", f.name, ty(&f.value))).collect();
        format!("{{{}}}", inner.join(","))
    };
    match f {
        _ if depth > 6 => "…".into(),
        F::TypeName(name) => match reg.get(name) {
            None => name.clone(),
            Some(C::UnitStruct) => "null".into(),
            Some(C::NewTypeStruct(inner)) => ty(inner),
            Some(C::TupleStruct(fs)) => format!("[{}]", fs.iter().map(ty).collect::<Vec<_>>().join(",")),
            Some(C::Struct(fields)) => object(fields),
            Some(C::Enum(vs)) => {
                let alts: Vec<String> = vs
                    .values()
                    .map(|v| match &v.value {
                        V::Unit => format!("\"{}\"", v.name),
                        V::NewType(inner) => format!("{{\"{}\":{}}}", v.name, ty(inner)),
                        V::Tuple(fs) => format!(
                            "{{\"{}\":[{}]}}",
                            v.name,
                            fs.iter().map(ty).collect::<Vec<_>>().join(",")
                        ),
                        V::Struct(fields) => format!("{{\"{}\":{}}}", v.name, object(fields)),
                        V::Variable(_) => format!("\"{}\"", v.name),
                    })
                    .collect();
                alts.join(" | ")
            }
        },
        F::Unit => "null".into(),
        F::Bool => "bool".into(),
        F::Str | F::Char => "string".into(),
        F::Option(inner) => format!("{} | null", ty(inner)),
        F::Seq(inner) => format!("[{}]", ty(inner)),
        F::Map { key, value } => format!("{{{}:{}}}", ty(key), ty(value)),
        F::Tuple(fs) => format!("[{}]", fs.iter().map(ty).collect::<Vec<_>>().join(",")),
        F::TupleArray { content, size } => format!("[{}; {size}]", ty(content)),
        F::Bytes => "[u8]".into(),
        F::Variable(_) => "any".into(),
        // Numbers: by their Rust type, which says the range (`u64`, `i32`, `f64`).
        other => format!("{other:?}").to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algos::ricart_agrawala::Msg;
    use crate::external::Json;
    use serde_json::json;
    #[test]
    fn message_shapes_are_traced_from_the_enum() {
        let shapes = message_shapes::<Msg>().unwrap();
        let shown: Vec<String> = shapes.iter().map(MessageShape::shape).collect();
        assert_eq!(shown, [r#"{"type":"REQUEST","ticket":u64}"#, r#"{"type":"REPLY"}"#]);
        assert_eq!(shapes[0].example, json!({"type": "REQUEST", "ticket": 0}));
        let lamport = message_shapes::<crate::algos::lamport::Msg>().unwrap();
        assert!(lamport.iter().all(|s| s.fields[0].name == "stamp"), "{lamport:?}");
        // Nested types, options and lists are spelled out.
        let cb = message_shapes::<crate::algos::centralized_bully::Msg>().unwrap();
        let state = cb.iter().find(|s| s.tag == "STATE").unwrap().shape();
        assert!(state.contains(r#""term":{"epoch":u64,"id":u32}"#), "{state}");
        assert!(state.contains(" | null"), "{state}");
        assert!(message_shapes::<crate::algos::baseline::Msg>().unwrap().is_empty());
        // A message type serde cannot trace says so rather than make up a shape.
        assert!(message_shapes::<Json>().is_err());
    }
}
