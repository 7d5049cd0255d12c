//! A tool's declaration, stated once: its name, tier, description,
//! annotations and arguments. Both the tools/list entry and the argument
//! checks are generated from it, so no argument name is written twice.
//!
//! An argument is declared as a typed constant (`Text`, `RequiredText`,
//! `Integer`, `Flag`, `Texts`, `Object`) whose `spec` goes into the
//! tool's [`ToolSpec::args`] and whose `read` is the only way the tool gets
//! its value. So a tool cannot read an argument its schema does not declare,
//! or read it as another type than the schema says:
//!
//! ```text
//! const BUFFER: RequiredText = RequiredText::new("buffer", "A buffer id from list_buffers.");
//! const LIMIT: Integer = Integer::limit(50, 500, "How many messages.");
//! const SPEC: ToolSpec = ToolSpec {
//!     name: "read_since",
//!     tier: Tier::Release,
//!     description: "…",
//!     effect: Effect::ReadOnly,
//!     args: &[BUFFER.spec, LIMIT.spec],
//! };
//! ```
//!
//! (The module is the crate's own; the unit test
//! `a_declared_spec_makes_the_schema_it_is_read_by` runs this example.)
//!
//! A tool file pairs its spec with its run as a
//! `Declared` named `TOOL`, and the
//! spec table (`crate::tools::TOOLS`) lists it: adding a tool is its file
//! and that one line.
//!
//! Checked in this order (the registry does the first two before the tool
//! runs; the tool's reads do the rest, in the order it reads):
//! 1. an argument that exists only while control.debug is on, sent while it
//!    is off (any value, `null` included): `debug tools are disabled`;
//! 2. an argument the spec does not declare: `unknown argument "<name>"`;
//! 3. each read: `missing <name>` for a required one, `<name> must be …`
//!    for a wrong type (see `crate::read::args`).

use crate::read::args::{clamp, ArgError, Args};
use crate::read::errors::DEBUG_DISABLED;
use crate::read::result::ToolOutcome;
use crate::tools::context::Settings;
use crate::tools::registry::Tier;
use serde_json::{json, Map, Value};

/// What calling a tool can change, as its tools/list annotations say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Changes nothing.
    ReadOnly,
    /// Changes only the subscriptions, never IRC; repeating one is not a
    /// no-op (subscribe, unsubscribe).
    Subscriptions,
    /// Makes a session send to IRC (send_raw).
    SendsToIrc,
}

impl Effect {
    /// The tools/list annotations.
    pub(crate) fn annotations(self) -> Value {
        match self {
            Effect::ReadOnly => json!({ "readOnlyHint": true }),
            Effect::Subscriptions => json!({
                "readOnlyHint": false,
                "destructiveHint": false,
                "idempotentHint": false,
            }),
            Effect::SendsToIrc => json!({
                "readOnlyHint": false,
                "destructiveHint": true,
                "idempotentHint": false,
                "openWorldHint": true,
            }),
        }
    }
}

/// One tool, declared.
#[derive(Clone, Copy, Debug)]
pub struct ToolSpec {
    /// Its name: one of the contract's seventeen.
    pub name: &'static str,
    /// The switch that serves it.
    pub(crate) tier: Tier,
    /// Its tools/list description.
    pub(crate) description: &'static str,
    /// What it can change.
    pub(crate) effect: Effect,
    /// Its arguments, in the order the tool reads them.
    pub args: &'static [ArgSpec],
}

impl ToolSpec {
    /// The tools/list entry; `debug` is control.debug (arguments that exist
    /// only with it are left out while it is off).
    pub fn descriptor(&self, debug: bool) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": object_schema(self.args, debug),
            "annotations": self.effect.annotations(),
        })
    }

    /// The checks made before the tool runs: an argument that exists only
    /// with control.debug, sent while it is off; then a name the spec does
    /// not declare.
    pub(crate) fn check_names(&self, args: &Args, settings: &Settings) -> Result<(), ToolOutcome> {
        let debug_only_sent = self
            .args
            .iter()
            .any(|a| a.debug_only && args.was_sent(a.name));
        if debug_only_sent && !settings.debug {
            return Err(ToolOutcome::error(DEBUG_DISABLED));
        }
        Ok(expect_declared(args, self.args)?)
    }
}

/// One argument, declared.
#[derive(Clone, Copy, Debug)]
pub struct ArgSpec {
    /// Its name, as the client sends it.
    pub name: &'static str,
    /// Its schema description.
    pub(crate) description: &'static str,
    /// Its JSON type and default.
    pub shape: Shape,
    /// Listed under `required`.
    pub required: bool,
    /// Exists only while control.debug is on (subscribe's raw and log).
    pub(crate) debug_only: bool,
}

/// An argument's JSON type, with the default its schema states.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// A string, with its default when it has one.
    Text(Option<&'static str>),
    /// An integer and its default (no maximum: larger values are clamped,
    /// not refused).
    Integer(i64),
    /// A boolean and its default.
    Flag(bool),
    /// An array of strings.
    Texts,
    /// A closed object with these properties.
    Object(&'static [ArgSpec]),
}

impl ArgSpec {
    const fn new(name: &'static str, description: &'static str, shape: Shape) -> ArgSpec {
        ArgSpec {
            name,
            description,
            shape,
            required: false,
            debug_only: false,
        }
    }

    /// The property's schema.
    fn schema(&self, debug: bool) -> Value {
        let d = self.description;
        match self.shape {
            Shape::Text(None) => json!({"type": "string", "description": d}),
            Shape::Text(Some(default)) => {
                json!({"type": "string", "default": default, "description": d})
            }
            Shape::Integer(default) => {
                json!({"type": "integer", "default": default, "description": d})
            }
            Shape::Flag(default) => {
                json!({"type": "boolean", "default": default, "description": d})
            }
            Shape::Texts => {
                json!({"type": "array", "items": {"type": "string"}, "description": d})
            }
            Shape::Object(properties) => {
                let mut schema = object_schema(properties, debug);
                schema["description"] = Value::from(d);
                schema
            }
        }
    }
}

/// A closed object schema over `args` (`additionalProperties: false`),
/// `required` listing the required ones in declared order (absent when none).
fn object_schema(args: &[ArgSpec], debug: bool) -> Value {
    let shown = || args.iter().filter(|a| debug || !a.debug_only);
    let properties: Map<String, Value> = shown()
        .map(|a| (a.name.to_owned(), a.schema(debug)))
        .collect();
    let required: Vec<&str> = shown().filter(|a| a.required).map(|a| a.name).collect();
    let mut schema = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

fn expect_declared(args: &Args, declared: &[ArgSpec]) -> Result<(), ArgError> {
    let names: Vec<&str> = declared.iter().map(|a| a.name).collect();
    args.expect_only(&names)
}

/// An optional string argument.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Text {
    /// Its declaration.
    pub(crate) spec: ArgSpec,
}

impl Text {
    /// An optional string without a default.
    pub(crate) const fn new(name: &'static str, description: &'static str) -> Text {
        Text {
            spec: ArgSpec::new(name, description, Shape::Text(None)),
        }
    }

    /// Its value; `None` when absent or `null`.
    pub(crate) fn read<'a>(&self, args: &'a Args) -> Result<Option<&'a str>, ArgError> {
        args.opt_str(self.spec.name)
    }
}

/// An optional string argument with a default: what the tool gets when it
/// is absent is exactly what the schema states.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Choice {
    /// Its declaration.
    pub(crate) spec: ArgSpec,
    default: &'static str,
}

impl Choice {
    /// A string that is `default` when absent.
    pub(crate) const fn new(
        name: &'static str,
        default: &'static str,
        description: &'static str,
    ) -> Choice {
        Choice {
            spec: ArgSpec::new(name, description, Shape::Text(Some(default))),
            default,
        }
    }

    /// Its value, or the default when absent or `null`.
    pub(crate) fn read<'a>(&self, args: &'a Args) -> Result<&'a str, ArgError> {
        Ok(args.opt_str(self.spec.name)?.unwrap_or(self.default))
    }
}

/// A required string argument.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RequiredText {
    /// Its declaration.
    pub(crate) spec: ArgSpec,
}

impl RequiredText {
    /// A required string.
    pub(crate) const fn new(name: &'static str, description: &'static str) -> RequiredText {
        let mut spec = ArgSpec::new(name, description, Shape::Text(None));
        spec.required = true;
        RequiredText { spec }
    }

    /// Its value; `missing <name>` when absent or `null`.
    pub(crate) fn read<'a>(&self, args: &'a Args) -> Result<&'a str, ArgError> {
        args.required_str(self.spec.name)
    }
}

/// An integer argument with a default, clamped (never refused) to a range.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Integer {
    /// Its declaration.
    pub(crate) spec: ArgSpec,
    default: i64,
    min: i64,
    max: i64,
}

impl Integer {
    /// An integer named `name`: `default` when absent, else clamped to
    /// `min`…`max`.
    pub(crate) const fn new(
        name: &'static str,
        default: i64,
        min: i64,
        max: i64,
        description: &'static str,
    ) -> Integer {
        Integer {
            spec: ArgSpec::new(name, description, Shape::Integer(default)),
            default,
            min,
            max,
        }
    }

    /// A page's `limit`: `default` when absent, else clamped to 1…`max`.
    pub(crate) const fn limit(default: i64, max: i64, description: &'static str) -> Integer {
        Integer::new("limit", default, 1, max, description)
    }

    /// Its value: the default when absent or `null`, else clamped.
    pub(crate) fn read(&self, args: &Args) -> Result<i64, ArgError> {
        Ok(clamp(
            args.opt_int(self.spec.name)?.unwrap_or(self.default),
            self.min,
            self.max,
        ))
    }

    /// [`Integer::read`] as a count: the ranges tools use are never
    /// negative, and a negative one would read as 0.
    pub(crate) fn read_count(&self, args: &Args) -> Result<usize, ArgError> {
        Ok(usize::try_from(self.read(args)?).unwrap_or(0))
    }
}

/// A boolean argument with a default.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Flag {
    /// Its declaration.
    pub(crate) spec: ArgSpec,
    default: bool,
}

impl Flag {
    /// A boolean that is `default` when absent.
    pub(crate) const fn new(name: &'static str, default: bool, description: &'static str) -> Flag {
        Flag {
            spec: ArgSpec::new(name, description, Shape::Flag(default)),
            default,
        }
    }

    /// Its value, or the default when absent or `null`.
    pub(crate) fn read(&self, args: &Args) -> Result<bool, ArgError> {
        Ok(args.opt_bool(self.spec.name)?.unwrap_or(self.default))
    }
}

/// An optional array-of-strings argument.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Texts {
    /// Its declaration.
    pub(crate) spec: ArgSpec,
}

impl Texts {
    /// An optional array of strings.
    pub(crate) const fn new(name: &'static str, description: &'static str) -> Texts {
        Texts {
            spec: ArgSpec::new(name, description, Shape::Texts),
        }
    }

    /// Its entries; `None` when absent or `null`.
    pub(crate) fn read<'a>(&self, args: &'a Args) -> Result<Option<Vec<&'a str>>, ArgError> {
        args.opt_str_array(self.spec.name)
    }
}

/// An optional closed-object argument: its own properties are declared the
/// same way, and its errors name them `<name>.<property>`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Object {
    /// Its declaration.
    pub(crate) spec: ArgSpec,
}

impl Object {
    /// An object taking exactly `properties`.
    pub(crate) const fn new(
        name: &'static str,
        description: &'static str,
        properties: &'static [ArgSpec],
    ) -> Object {
        Object {
            spec: ArgSpec::new(name, description, Shape::Object(properties)),
        }
    }

    /// The same object, existing only while control.debug is on.
    pub(crate) const fn debug_only(mut self) -> Object {
        self.spec.debug_only = true;
        self
    }

    /// Its properties, after refusing one it does not take; `None` when
    /// absent or `null`.
    pub(crate) fn read(&self, args: &Args) -> Result<Option<Args>, ArgError> {
        let Some(inner) = args.opt_object(self.spec.name)? else {
            return Ok(None);
        };
        if let Shape::Object(properties) = self.spec.shape {
            expect_declared(&inner, properties)?;
        }
        Ok(Some(inner))
    }
}

/// `session`, as most per-session tools take it.
pub(crate) const SESSION: RequiredText =
    RequiredText::new("session", "A session id from list_sessions.");

/// `buffer`, as the per-buffer tools take it.
pub(crate) const BUFFER: RequiredText =
    RequiredText::new("buffer", "A buffer id from list_buffers.");

/// `contains` of the tools that filter lines (raw or log) by their text.
pub(crate) const LINE_CONTAINS: Text = Text::new(
    "contains",
    "Only lines containing this text, ignoring case.",
);

/// `cursor` of a tool that pages forwards with a `next_cursor`.
pub(crate) const NEXT_CURSOR: Text = Text::new("cursor", "A previous next_cursor.");

#[cfg(test)]
mod tests {
    use super::*;

    /// The module doc's example, run.
    #[test]
    fn a_declared_spec_makes_the_schema_it_is_read_by() {
        const BUFFER: RequiredText = RequiredText::new("buffer", "A buffer id from list_buffers.");
        const LIMIT: Integer = Integer::limit(50, 500, "How many messages.");
        const SPEC: ToolSpec = ToolSpec {
            name: "read_since",
            tier: Tier::Release,
            description: "…",
            effect: Effect::ReadOnly,
            args: &[BUFFER.spec, LIMIT.spec],
        };
        assert_eq!(
            SPEC.descriptor(false)["inputSchema"]["required"][0],
            "buffer"
        );
    }

    const NAME: RequiredText = RequiredText::new("name", "A name.");
    const MODE: Choice = Choice::new("mode", "fast", "fast or slow.");
    const COUNT: Integer = Integer::new("count", 5, 0, 10, "How many.");
    const ON: Flag = Flag::new("on", false, "Whether.");
    const TAGS: Texts = Texts::new("tags", "Tags.");
    const INNER: Text = Text::new("inner", "Inside.");
    const BOX: Object = Object::new("box", "A box.", &[INNER.spec]).debug_only();
    const SPEC: ToolSpec = ToolSpec {
        name: "list_sessions",
        tier: Tier::Release,
        description: "A tool.",
        effect: Effect::ReadOnly,
        args: &[
            NAME.spec, MODE.spec, COUNT.spec, ON.spec, TAGS.spec, BOX.spec,
        ],
    };

    fn args(v: Value) -> Args {
        match Args::from_request(Some(&v)) {
            Ok(a) => a,
            Err(_) => panic!("an object"),
        }
    }

    #[test]
    fn the_schema_is_generated_from_the_declarations() {
        let on = SPEC.descriptor(true);
        assert_eq!(
            on["inputSchema"],
            json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "description": "A name."},
                    "mode": {"type": "string", "default": "fast", "description": "fast or slow."},
                    "count": {"type": "integer", "default": 5, "description": "How many."},
                    "on": {"type": "boolean", "default": false, "description": "Whether."},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags."},
                    "box": {
                        "type": "object",
                        "additionalProperties": false,
                        "description": "A box.",
                        "properties": {"inner": {"type": "string", "description": "Inside."}},
                    },
                },
            })
        );
        assert_eq!(on["annotations"], json!({"readOnlyHint": true}));
        let off = SPEC.descriptor(false);
        assert!(off["inputSchema"]["properties"].get("box").is_none());
    }

    #[test]
    fn reads_apply_defaults_and_clamps() {
        let a = args(json!({"name": "n", "count": 99}));
        assert_eq!(NAME.read(&a), Ok("n"));
        assert_eq!(MODE.read(&a), Ok("fast"));
        assert_eq!(COUNT.read(&a), Ok(10));
        assert_eq!(COUNT.read(&args(json!({"count": -3}))), Ok(0));
        assert_eq!(COUNT.read(&args(json!({}))), Ok(5));
        assert_eq!(ON.read(&a), Ok(false));
        assert_eq!(TAGS.read(&a), Ok(None));
        assert_eq!(
            NAME.read(&args(json!({}))).map_err(|e| e.to_string()),
            Err("invalid arguments: missing name".to_owned())
        );
    }

    #[test]
    fn names_are_checked_against_the_declarations() {
        let settings_off = Settings::default();
        let settings_on = Settings {
            debug: true,
            send: false,
        };
        let with_box = args(json!({"box": null, "zzz": 1}));
        assert_eq!(
            SPEC.check_names(&with_box, &settings_off),
            Err(ToolOutcome::error(DEBUG_DISABLED))
        );
        assert_eq!(
            SPEC.check_names(&with_box, &settings_on),
            Err(ToolOutcome::error(
                "invalid arguments: unknown argument \"zzz\""
            ))
        );
        assert_eq!(
            SPEC.check_names(&args(json!({"box": {}})), &settings_on),
            Ok(())
        );
        let inner = args(json!({"box": {"inner": "x", "outer": 1}}));
        assert_eq!(
            BOX.read(&inner).map(|_| ()).map_err(|e| e.to_string()),
            Err("invalid arguments: unknown argument \"box.outer\"".to_owned())
        );
    }
}
