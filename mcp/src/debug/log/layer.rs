//! The `tracing` layer that feeds the log ring.
//!
//! Installed once, beside the host's own output layer (reterm's fmt layer),
//! with [`layer`]. Which events it may ever see is decided per callsite,
//! once, by its own filter: the project's targets (`rete…`, `reterm…`) from
//! debug up, every other crate's from warning up, nothing at TRACE. So the
//! libraries' chatter never fills the ring, and a callsite neither this
//! layer nor the host's wants stays switched off entirely.
//!
//! For an event it does see, the layer's cost while no capture is on is one
//! relaxed atomic load ([`super::sink::is_open`]): nothing is formatted,
//! copied or allocated. While capture is on it renders the event (see
//! [`super::line`]) on the thread that logged it and hands it to the sink.

use super::level::{Category, Level, LEVEL_FIELD};
use super::line::Draft;
use super::sink;
use rete_actors::wall_clock::now;
use serde_json::{Map, Value};
use std::cell::Cell;
use std::fmt::Write as _;
use tracing::field::{Field, Visit};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::filter::{Filtered, LevelFilter};
use tracing_subscriber::layer::{Context, Filter, Layer, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;

/// The layer; install it with [`layer`], which adds its filter.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogLayer;

/// The layer's own filter (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct LogFilter;

/// The log ring's layer with its filter, ready for
/// `tracing_subscriber::registry().with(…)`.
///
/// ```
/// use tracing_subscriber::layer::SubscriberExt as _;
/// let subscriber = tracing_subscriber::registry().with(rete_mcp::debug::log::layer());
/// let _guard = tracing::subscriber::set_default(subscriber);
/// tracing::info!(target: "rete::network", "not captured: no capture is on");
/// ```
pub fn layer<S>() -> Filtered<LogLayer, LogFilter, S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    LogLayer.with_filter(LogFilter)
}

/// A subscriber with only the log layer, for tests and benchmarks of the
/// layer alone.
pub fn subscriber() -> impl Subscriber + Send + Sync {
    tracing_subscriber::registry().with(layer())
}

/// True when the layer may ever see events from this callsite.
fn wanted(meta: &Metadata<'_>) -> bool {
    if !meta.is_event() {
        return false;
    }
    let ours = meta.target().starts_with("rete");
    let level = *meta.level();
    if ours {
        level <= tracing::Level::DEBUG
    } else {
        level <= tracing::Level::WARN
    }
}

impl<S> Filter<S> for LogFilter {
    fn enabled(&self, meta: &Metadata<'_>, _cx: &Context<'_, S>) -> bool {
        wanted(meta)
    }

    fn callsite_enabled(&self, meta: &'static Metadata<'static>) -> Interest {
        if wanted(meta) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::DEBUG)
    }
}

thread_local! {
    /// Set while this thread renders an event for the ring, so an event
    /// logged from inside that work (by the channel, say) is not captured
    /// again, which could otherwise recurse or wait on the sink's own lock.
    static RENDERING: Cell<bool> = const { Cell::new(false) };
}

impl<S: Subscriber> Layer<S> for LogLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: tracing_subscriber::layer::Context<'_, S>) {
        if !sink::is_open() {
            return;
        }
        if RENDERING.with(|r| r.replace(true)) {
            return;
        }
        sink::push(render(event));
        RENDERING.with(|r| r.set(false));
    }
}

/// An event as a draft line: its level, category, message and fields.
fn render(event: &Event<'_>) -> Draft {
    let meta = event.metadata();
    let mut fields = Fields::default();
    event.record(&mut fields);
    let level = fields
        .level
        .unwrap_or_else(|| Level::of_tracing(meta.level()));
    Draft::new(
        now(),
        level,
        Category::of_target(meta.target()),
        &fields.message,
        fields.others,
    )
}

/// An event's fields: the message, the level asked for, the rest as JSON.
#[derive(Default)]
struct Fields {
    message: String,
    level: Option<Level>,
    others: Map<String, Value>,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else if field.name() == LEVEL_FIELD {
            let asked = format!("{value:?}");
            self.level = self.level.or(Level::parse(asked.trim_matches('"')));
        } else {
            self.others
                .insert(field.name().to_owned(), Value::String(format!("{value:?}")));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message.push_str(value),
            LEVEL_FIELD => self.level = self.level.or(Level::parse(value)),
            name => {
                self.others.insert(name.to_owned(), Value::from(value));
            }
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.others
            .insert(field.name().to_owned(), Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.others
            .insert(field.name().to_owned(), Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.others
            .insert(field.name().to_owned(), Value::from(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.others
            .insert(field.name().to_owned(), Value::from(value));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.others
            .insert(field.name().to_owned(), Value::String(value.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_targets_below_warning() {
        use tracing::callsite::Identifier;
        use tracing::metadata::Kind;
        struct Cs;
        impl tracing::Callsite for Cs {
            fn set_interest(&self, _: Interest) {}
            fn metadata(&self) -> &Metadata<'_> {
                unreachable!()
            }
        }
        static CS: Cs = Cs;
        let meta = |target: &'static str, level| {
            Metadata::new(
                "e",
                target,
                level,
                None,
                None,
                None,
                tracing::field::FieldSet::new(&[], Identifier(&CS)),
                Kind::EVENT,
            )
        };
        assert!(wanted(&meta("rete::network", tracing::Level::DEBUG)));
        assert!(wanted(&meta("reterm::app", tracing::Level::INFO)));
        assert!(!wanted(&meta("rete_actors", tracing::Level::TRACE)));
        assert!(!wanted(&meta("hyper::proto", tracing::Level::INFO)));
        assert!(wanted(&meta("hyper::proto", tracing::Level::WARN)));
    }
}
