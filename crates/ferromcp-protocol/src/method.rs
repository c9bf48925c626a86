//! Method names, and typed decoding of params by method.
//!
//! Each `*::decode(method, params)` is a `match` on the method string that
//! decodes the raw params straight into the type that method names: no
//! untagged enum, no trial and error. Bad params give `-32602` naming the
//! method and the problem. Unknown methods are not an error here: they come
//! back as `Custom` with their raw params so that a router can still serve
//! custom methods or answer `-32601` itself.
//!
//! Params types carry no `_meta`; the envelope member in the raw params is
//! skipped by the typed decode and read separately by
//! [`crate::meta::RequestMeta`]. Outgoing, [`WithMeta`] puts it back.
// Foreign type: serde_json (`Value`, `Map`, `RawValue`, `Number`, `Error`) in this module's public
// signatures: it is the JSON data model users pass in and get back (arbitrary params, results,
// schemas, `_meta`); the SDK is built on serde_json by design.

use crate::error::ErrorObject;
use crate::jsonrpc::{Notification, Request};
use crate::meta::RequestMeta;
use crate::types::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// `initialize` (handshake only).
pub const INITIALIZE: &str = "initialize";
/// `ping` (handshake only, either direction).
pub const PING: &str = "ping";
/// `server/discover` (modern only).
pub const SERVER_DISCOVER: &str = "server/discover";
/// `tools/list`
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call`
pub const TOOLS_CALL: &str = "tools/call";
/// `resources/list`
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list`
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read`
pub const RESOURCES_READ: &str = "resources/read";
/// `skills/list` (skills extension, both eras).
pub const SKILLS_LIST: &str = "skills/list";
/// `skills/get` (skills extension, both eras).
pub const SKILLS_GET: &str = "skills/get";
/// `resources/directory/read` (skills extension, both eras).
pub const RESOURCES_DIRECTORY_READ: &str = "resources/directory/read";
/// `resources/subscribe` (handshake only).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe` (handshake only).
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// `prompts/list`
pub const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`
pub const PROMPTS_GET: &str = "prompts/get";
/// `completion/complete`
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// `logging/setLevel` (handshake only).
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// `subscriptions/listen` (modern only).
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// `sampling/createMessage` (server→client request on handshake
/// revisions; an input request on the modern wire).
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// `elicitation/create` (likewise).
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// `roots/list` (likewise).
pub const ROOTS_LIST: &str = "roots/list";

/// `tasks/get` (tasks extension, modern only).
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/update` (tasks extension, modern only).
pub const TASKS_UPDATE: &str = "tasks/update";
/// `tasks/cancel` (tasks extension, modern only).
pub const TASKS_CANCEL: &str = "tasks/cancel";

/// `notifications/initialized` (handshake only).
pub const NOTIFICATIONS_INITIALIZED: &str = "notifications/initialized";
/// `notifications/cancelled`
pub const NOTIFICATIONS_CANCELLED: &str = "notifications/cancelled";
/// `notifications/progress`
pub const NOTIFICATIONS_PROGRESS: &str = "notifications/progress";
/// `notifications/message`
pub const NOTIFICATIONS_MESSAGE: &str = "notifications/message";
/// `notifications/resources/updated`
pub const NOTIFICATIONS_RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// `notifications/resources/list_changed`
pub const NOTIFICATIONS_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// `notifications/tools/list_changed`
pub const NOTIFICATIONS_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// `notifications/prompts/list_changed`
pub const NOTIFICATIONS_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// `notifications/roots/list_changed` (handshake only).
pub const NOTIFICATIONS_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
/// `notifications/elicitation/complete` (2025-11-25 only).
pub const NOTIFICATIONS_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
/// `notifications/subscriptions/acknowledged` (modern only).
pub const NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
    "notifications/subscriptions/acknowledged";

// BASE-12
/// Client request methods of the modern wire.
pub const MODERN_CLIENT_METHODS: [&str; 10] = [
    SERVER_DISCOVER,
    COMPLETION_COMPLETE,
    PROMPTS_GET,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_READ,
    SUBSCRIPTIONS_LISTEN,
    TOOLS_CALL,
    TOOLS_LIST,
];

// BASE-12
/// Client request methods removed on the modern wire.
pub const HANDSHAKE_ONLY_CLIENT_METHODS: [&str; 5] = [
    INITIALIZE,
    PING,
    LOGGING_SET_LEVEL,
    RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE,
];

/// Client request methods that exist only on the modern wire:
/// `server/discover`, `subscriptions/listen` and the tasks extension.
pub const MODERN_ONLY_CLIENT_METHODS: [&str; 5] = [
    SERVER_DISCOVER,
    SUBSCRIPTIONS_LISTEN,
    TASKS_GET,
    TASKS_UPDATE,
    TASKS_CANCEL,
];

// BASE-12
/// Whether client request `method` exists on `era`'s wire: the
/// one era rule for methods. Handshake-only methods are unknown on the
/// modern wire and modern-only ones in the handshake era (both -32601).
/// Methods this crate does not know are not ruled out here; they are
/// unknown in either era ([`ClientRequest::into_owned`]).
pub fn client_method_exists_in(method: &str, era: crate::Era) -> bool {
    match era {
        crate::Era::Modern => !HANDSHAKE_ONLY_CLIENT_METHODS.contains(&method),
        crate::Era::Handshake => !MODERN_ONLY_CLIENT_METHODS.contains(&method),
    }
}

// MRTR-01
/// Methods that may answer `input_required`.
pub const MRTR_METHODS: [&str; 3] = [TOOLS_CALL, PROMPTS_GET, RESOURCES_READ];

// CACHE-01
/// Methods whose complete results carry cache hints.
pub const CACHEABLE_METHODS: [&str; 6] = [
    SERVER_DISCOVER,
    TOOLS_LIST,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_READ,
];

// PAGE-01
/// Paginated methods.
pub const PAGINATED_METHODS: [&str; 4] = [
    TOOLS_LIST,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST,
];

/// The `'static` name of a method this crate knows (client requests of
/// either era), so that callers can keep the name without a copy.
pub fn known_client_method(method: &str) -> Option<&'static str> {
    MODERN_CLIENT_METHODS
        .iter()
        .chain(HANDSHAKE_ONLY_CLIENT_METHODS.iter())
        .find(|m| **m == method)
        .copied()
}

// MRTR-01
/// Whether `method` may answer `input_required`.
pub fn allows_input_required(method: &str) -> bool {
    MRTR_METHODS.contains(&method)
}

// CACHE-01
/// Whether complete results of `method` carry cache hints.
pub fn is_cacheable(method: &str) -> bool {
    CACHEABLE_METHODS.contains(&method)
}

/// Params that must be present and decode as `T`.
fn required<'a, T: Deserialize<'a>>(
    method: &str,
    params: Option<&'a RawValue>,
) -> Result<T, ErrorObject> {
    let Some(p) = params else {
        return Err(ErrorObject::invalid_params(format_args!(
            "{method} requires params"
        )));
    };
    serde_json::from_str(p.get())
        .map_err(|e| ErrorObject::invalid_params(format_args!("{method}: {e}")))
}

/// Params that may be absent (then `T::default()`).
fn optional<'a, T: Deserialize<'a> + Default>(
    method: &str,
    params: Option<&'a RawValue>,
) -> Result<T, ErrorObject> {
    match params {
        None => Ok(T::default()),
        Some(_) => required(method, params),
    }
}

/// Serializes typed params as a JSON object, adding `_meta` when given.
fn to_object<P: Serialize>(
    params: &P,
    meta: Option<&RequestMeta>,
) -> Result<Value, serde_json::Error> {
    let mut v = serde_json::to_value(params)?;
    if let (Some(meta), Value::Object(o)) = (meta, &mut v) {
        o.insert("_meta".to_owned(), serde_json::to_value(meta)?);
    }
    Ok(v)
}

/// Raw custom params as a JSON object, adding `_meta` when given.
fn raw_to_object(
    params: Option<&RawValue>,
    meta: Option<&RequestMeta>,
) -> Result<Option<Value>, serde_json::Error> {
    let mut v = match params {
        Some(p) => Some(serde_json::from_str::<Value>(p.get())?),
        None => None,
    };
    if let Some(meta) = meta {
        let obj = v.get_or_insert_with(|| Value::Object(JsonObject::new()));
        if let Value::Object(o) = obj {
            o.insert("_meta".to_owned(), serde_json::to_value(meta)?);
        }
    }
    Ok(v)
}

/// Outgoing request params with the `_meta` envelope put back in:
/// serializes as `params`' members plus `"_meta": meta`.
#[derive(Debug, Serialize)]
pub struct WithMeta<'a, P: Serialize> {
    /// The envelope.
    #[serde(rename = "_meta")]
    pub meta: &'a RequestMeta,
    /// The typed params (must serialize as an object).
    #[serde(flatten)]
    pub params: &'a P,
}

impl<'a, P: Serialize> WithMeta<'a, P> {
    /// Pairs `params` with `meta`.
    pub fn new(meta: &'a RequestMeta, params: &'a P) -> Self {
        Self { meta, params }
    }
}

/// Declares one of the dispatch enums below.
macro_rules! dispatch_enum {
    (
        $(#[$doc:meta])*
        $name:ident from $src:ident {
            $( $(#[$vdoc:meta])* $variant:ident($ty:ty) = $method:ident, $mode:ident; )*
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub enum $name<'a> {
            $( $(#[$vdoc])* $variant($ty), )*
            /// A method this crate does not know, with its raw params, so it
            /// can still be routed.
            Custom {
                /// The method name.
                method: &'a str,
                /// The raw params, `_meta` included.
                params: Option<&'a RawValue>,
            },
        }

        impl<'a> $name<'a> {
            /// Decodes `params` into the type `method` names; unknown
            /// methods become `Custom`. Bad params → -32602.
            pub fn decode(method: &'a str, params: Option<&'a RawValue>) -> Result<Self, ErrorObject> {
                Ok(match method {
                    $( $method => Self::$variant($mode(method, params)?), )*
                    _ => Self::Custom { method, params },
                })
            }

            /// Decodes the params of a framed message.
            pub fn from_message(msg: &'a $src<'_>) -> Result<Self, ErrorObject> {
                Self::decode(&msg.method, msg.params)
            }

            // ERR-08
            /// The same message owning its data. A `Custom` (unknown)
            /// method is -32601: nothing past this point serves it.
            pub fn into_owned(self) -> Result<$name<'static>, ErrorObject> {
                match self {
                    $( Self::$variant(p) => Ok($name::$variant(p)), )*
                    Self::Custom { method, .. } => Err(ErrorObject::method_not_found(method)),
                }
            }

            /// The method name.
            pub fn method(&self) -> &'a str {
                match self {
                    $( Self::$variant(_) => $method, )*
                    Self::Custom { method, .. } => method,
                }
            }

            /// Whether this is a `Custom` (unknown) method.
            pub fn is_custom(&self) -> bool {
                matches!(self, Self::Custom { .. })
            }

            /// The params as a JSON object, with `meta` added as `_meta`
            /// when given (outgoing side; a `Custom` method without params
            /// and without `meta` gives `None`).
            pub fn params_value(&self, meta: Option<&RequestMeta>) -> Result<Option<Value>, serde_json::Error> {
                match self {
                    $( Self::$variant(p) => to_object(p, meta).map(Some), )*
                    Self::Custom { params, .. } => raw_to_object(*params, meta),
                }
            }
        }
    };
}

dispatch_enum! {
    /// A client→server request of either era, with typed params.
    ClientRequest from Request {
        /// `server/discover` (modern).
        Discover(DiscoverRequestParams) = SERVER_DISCOVER, optional;
        /// `initialize` (handshake; boxed, it is large and rare).
        Initialize(Box<InitializeRequestParams>) = INITIALIZE, required;
        /// `ping` (handshake).
        Ping(PingRequestParams) = PING, optional;
        /// `tools/list`
        ListTools(ListToolsRequestParams) = TOOLS_LIST, optional;
        /// `tools/call`
        CallTool(CallToolRequestParams) = TOOLS_CALL, required;
        /// `resources/list`
        ListResources(ListResourcesRequestParams) = RESOURCES_LIST, optional;
        /// `resources/templates/list`
        ListResourceTemplates(ListResourceTemplatesRequestParams) = RESOURCES_TEMPLATES_LIST, optional;
        /// `resources/read`
        ReadResource(ReadResourceRequestParams) = RESOURCES_READ, required;
        /// `resources/subscribe` (handshake).
        Subscribe(SubscribeRequestParams) = RESOURCES_SUBSCRIBE, required;
        /// `resources/unsubscribe` (handshake).
        Unsubscribe(UnsubscribeRequestParams) = RESOURCES_UNSUBSCRIBE, required;
        /// `prompts/list`
        ListPrompts(ListPromptsRequestParams) = PROMPTS_LIST, optional;
        /// `prompts/get`
        GetPrompt(GetPromptRequestParams) = PROMPTS_GET, required;
        /// `completion/complete`
        Complete(CompleteRequestParams) = COMPLETION_COMPLETE, required;
        /// `logging/setLevel` (handshake).
        SetLevel(SetLevelRequestParams) = LOGGING_SET_LEVEL, required;
        /// `subscriptions/listen` (modern).
        Listen(SubscriptionsListenRequestParams) = SUBSCRIPTIONS_LISTEN, required;
        /// `tasks/get` (tasks extension).
        GetTask(TaskIdParams) = TASKS_GET, required;
        /// `tasks/update` (tasks extension).
        UpdateTask(UpdateTaskRequestParams) = TASKS_UPDATE, required;
        /// `tasks/cancel` (tasks extension).
        CancelTask(TaskIdParams) = TASKS_CANCEL, required;
        /// `skills/list` (skills extension).
        ListSkills(ListSkillsRequestParams) = SKILLS_LIST, optional;
        /// `skills/get` (skills extension).
        GetSkill(GetSkillRequestParams) = SKILLS_GET, required;
        /// `resources/directory/read` (skills extension).
        ReadDirectory(ReadDirectoryRequestParams) = RESOURCES_DIRECTORY_READ, required;
    }
}

impl<'a> ClientRequest<'a> {
    /// Like [`Self::decode`], but `tools/call` params are typed from the
    /// members the ladder's probe already separated (no second pass over
    /// `_meta`). Anything the fast path cannot type exactly as the full
    /// decode would (a missing or mistyped member, a duplicate) goes
    /// through [`Self::decode`], which owns the error texts.
    pub fn decode_probed(
        method: &'a str,
        params: Option<&'a RawValue>,
        members: &crate::probe::ProbedMembers<'_>,
    ) -> Result<Self, ErrorObject> {
        if method == TOOLS_CALL && members.usable {
            if let Some(p) = call_tool_from_members(members) {
                return Ok(Self::CallTool(p));
            }
        }
        Self::decode(method, params)
    }
}

/// `tools/call` params from probed members, with `arguments` left untyped:
/// the params without them, and the arguments object as JSON text (`None`
/// when absent or `null`). `None` when any member does not type, the
/// arguments included (the full decode then reports it).
pub(crate) fn call_tool_deferring_arguments<'a>(
    m: &crate::probe::ProbedMembers<'a>,
) -> Option<(CallToolRequestParams, Option<&'a RawValue>)> {
    let arguments = match m.arguments {
        None => None,
        Some(raw) => types_as_object(raw)?,
    };
    let params = call_tool_from_members(&crate::probe::ProbedMembers {
        arguments: None,
        ..*m
    })?;
    Some((params, arguments))
}

/// Whether `raw` types as `Option<JsonObject>`, without building it:
/// `Some(None)` for `null`, `Some(Some(raw))` for an object, `None` for
/// anything else. Every value is walked as `Value`'s decode walks it (the
/// same recursion limit, strings decoded), so the answer is the decode's.
pub(crate) fn types_as_object(raw: &RawValue) -> Option<Option<&RawValue>> {
    let text = raw.get().as_bytes();
    if text.first() == Some(&b'{') && plainly_typable(text) {
        return Some(Some(raw));
    }
    let mut de = serde_json::Deserializer::from_str(raw.get());
    let is_object = serde::Deserializer::deserialize_any(&mut de, ObjectOrNull).ok()?;
    de.end().ok()?;
    Some(is_object.then_some(raw))
}

/// Whether JSON text (syntactically valid: the raw decode checked it) is
/// clear of everything that can keep a valid JSON text from typing as a
/// `Value`: nesting near serde_json's recursion limit, a `\u` escape that
/// may be a lone surrogate, a number that may overflow an `f64` (one with
/// an exponent, or of over 300 digits). `false` means "walk it".
fn plainly_typable(text: &[u8]) -> bool {
    const MAX_DEPTH: usize = 64;
    const MAX_DIGITS: usize = 300;
    let (mut depth, mut digits, mut i) = (0usize, 0usize, 0usize);
    while let Some(&b) = text.get(i) {
        i += 1;
        match b {
            b'"' => loop {
                // To the string's end, past escapes.
                let Some(at) = memchr::memchr2(b'"', b'\\', &text[i.min(text.len())..]) else {
                    return false;
                };
                i += at + 1;
                if text[i - 1] == b'"' {
                    break;
                }
                match text.get(i) {
                    Some(b'u') if matches!(text.get(i + 1), Some(b'd' | b'D')) => return false,
                    Some(_) => i += 1,
                    None => return false,
                }
            },
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return false;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'0'..=b'9' => {
                digits += 1;
                if digits > MAX_DIGITS {
                    return false;
                }
                continue;
            }
            b'e' | b'E' if digits > 0 || text.get(i.wrapping_sub(2)) == Some(&b'.') => {
                return false;
            }
            _ => {}
        }
        digits = 0;
    }
    true
}

/// The top level of [`types_as_object`]: `true` for an object, `false`
/// for `null`, an error for anything else.
struct ObjectOrNull;

impl<'de> serde::de::Visitor<'de> for ObjectOrNull {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object or null")
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<bool, A::Error> {
        serde::de::Visitor::visit_map(crate::envelope::Skip::AS_DECODE, map).map(|()| true)
    }
}

/// `tools/call` params from probed members; `None` when any member does
/// not type (the full decode then reports it).
pub(crate) fn call_tool_from_members(
    m: &crate::probe::ProbedMembers<'_>,
) -> Option<CallToolRequestParams> {
    fn member<T: serde::de::DeserializeOwned>(raw: Option<&RawValue>) -> Option<Option<T>> {
        match raw {
            None => Some(None),
            Some(r) => serde_json::from_str::<Option<T>>(r.get()).ok(),
        }
    }
    Some(CallToolRequestParams {
        name: serde_json::from_str::<String>(m.name?.get()).ok()?,
        arguments: member(m.arguments)?,
        input_responses: member(m.input_responses)?,
        request_state: member(m.request_state)?,
    })
}

impl ClientRequest<'_> {
    // BASE-12
    /// Whether this method exists only on handshake revisions.
    pub fn is_handshake_only(&self) -> bool {
        !client_method_exists_in(self.method(), crate::Era::Modern)
    }

    /// Whether this method exists only on the modern wire.
    pub fn is_modern_only(&self) -> bool {
        !client_method_exists_in(self.method(), crate::Era::Handshake)
    }

    /// Whether this method exists on `era`'s wire
    /// ([`client_method_exists_in`]).
    pub fn exists_in(&self, era: crate::Era) -> bool {
        client_method_exists_in(self.method(), era)
    }

    // CACHE-06
    /// The `inputResponses` / `requestState` of an MRTR retry, if any
    /// (requests carrying either must not be cached).
    pub fn mrtr_echo(&self) -> (Option<&InputResponses>, Option<&str>) {
        match self {
            Self::CallTool(p) => (p.input_responses.as_ref(), p.request_state.as_deref()),
            Self::GetPrompt(p) => (p.input_responses.as_ref(), p.request_state.as_deref()),
            Self::ReadResource(p) => (p.input_responses.as_ref(), p.request_state.as_deref()),
            _ => (None, None),
        }
    }
}

dispatch_enum! {
    /// A client→server notification of either era.
    ClientNotification from Notification {
        /// `notifications/cancelled`
        Cancelled(CancelledNotificationParams) = NOTIFICATIONS_CANCELLED, optional;
        /// `notifications/initialized` (handshake).
        Initialized(InitializedNotificationParams) = NOTIFICATIONS_INITIALIZED, optional;
        /// `notifications/progress` (handshake: progress of a server→client request).
        Progress(ProgressNotificationParams) = NOTIFICATIONS_PROGRESS, required;
        /// `notifications/roots/list_changed` (handshake).
        RootsListChanged(NotificationParams) = NOTIFICATIONS_ROOTS_LIST_CHANGED, optional;
    }
}

dispatch_enum! {
    /// A server→client notification of either era.
    ServerNotification from Notification {
        /// `notifications/cancelled`
        Cancelled(CancelledNotificationParams) = NOTIFICATIONS_CANCELLED, optional;
        /// `notifications/progress`
        Progress(ProgressNotificationParams) = NOTIFICATIONS_PROGRESS, required;
        /// `notifications/message`
        LoggingMessage(LoggingMessageNotificationParams) = NOTIFICATIONS_MESSAGE, required;
        /// `notifications/resources/updated`
        ResourceUpdated(ResourceUpdatedNotificationParams) = NOTIFICATIONS_RESOURCES_UPDATED, required;
        /// `notifications/resources/list_changed`
        ResourceListChanged(NotificationParams) = NOTIFICATIONS_RESOURCES_LIST_CHANGED, optional;
        /// `notifications/tools/list_changed`
        ToolListChanged(NotificationParams) = NOTIFICATIONS_TOOLS_LIST_CHANGED, optional;
        /// `notifications/prompts/list_changed`
        PromptListChanged(NotificationParams) = NOTIFICATIONS_PROMPTS_LIST_CHANGED, optional;
        /// `notifications/subscriptions/acknowledged` (modern).
        SubscriptionsAcknowledged(SubscriptionsAcknowledgedNotificationParams) = NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED, required;
        /// `notifications/elicitation/complete` (2025-11-25).
        ElicitationComplete(ElicitationCompleteNotificationParams) = NOTIFICATIONS_ELICITATION_COMPLETE, required;
    }
}

impl ServerNotification<'_> {
    // STDIO-06
    /// `_meta["io.modelcontextprotocol/subscriptionId"]`, the key that
    /// demultiplexes listen streams.
    pub fn subscription_id(&self) -> Option<crate::jsonrpc::RequestId> {
        let meta = match self {
            Self::Cancelled(p) => p.meta.as_ref(),
            Self::Progress(p) => p.meta.as_ref(),
            Self::LoggingMessage(p) => p.meta.as_ref(),
            Self::ResourceUpdated(p) => p.meta.as_ref(),
            Self::ResourceListChanged(p)
            | Self::ToolListChanged(p)
            | Self::PromptListChanged(p) => p.meta.as_ref(),
            Self::SubscriptionsAcknowledged(p) => p.meta.as_ref(),
            Self::ElicitationComplete(p) => p.meta.as_ref(),
            Self::Custom { params, .. } => {
                return params.and_then(|p| {
                    #[derive(Deserialize)]
                    struct P {
                        #[serde(rename = "_meta", default)]
                        meta: Option<Meta>,
                    }
                    serde_json::from_str::<P>(p.get())
                        .ok()
                        .and_then(|p| subscription_id(p.meta.as_ref()))
                });
            }
        };
        subscription_id(meta)
    }
}

dispatch_enum! {
    // BASE-07
    /// A server→client request: handshake revisions only (the
    /// modern wire uses MRTR input requests instead).
    ServerRequest from Request {
        /// `sampling/createMessage`
        CreateMessage(CreateMessageRequestParams) = SAMPLING_CREATE_MESSAGE, required;
        /// `elicitation/create`
        Elicit(ElicitRequestParams) = ELICITATION_CREATE, required;
        /// `roots/list`
        ListRoots(ListRootsRequestParams) = ROOTS_LIST, optional;
        /// `ping`
        Ping(PingRequestParams) = PING, optional;
    }
}

impl From<InputRequest> for ServerRequest<'_> {
    // MRTR-15
    /// The handshake-era request equivalent to an MRTR input request.
    fn from(r: InputRequest) -> Self {
        match r {
            InputRequest::Elicitation(p) => Self::Elicit(p),
            InputRequest::Sampling(p) => Self::CreateMessage(p),
            InputRequest::ListRoots(p) => Self::ListRoots(p.unwrap_or_default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::JsonObject;
    use proptest::prelude::*;

    /// What the full decode makes of `text` as `Option<JsonObject>`, and
    /// what the walk says, side by side.
    fn both(text: &str) -> Option<(bool, bool)> {
        let raw: &RawValue = serde_json::from_str(text).ok()?;
        let typed = serde_json::from_str::<Option<JsonObject>>(raw.get());
        let walked = types_as_object(raw);
        assert_eq!(typed.is_ok(), walked.is_some(), "{text}");
        if let (Ok(t), Some(w)) = (&typed, walked) {
            assert_eq!(t.is_some(), w.is_some(), "{text}");
        }
        Some((typed.is_ok(), walked.is_some()))
    }

    #[test]
    fn arguments_type_as_an_object_exactly_when_the_decode_types_them() {
        for (text, ok) in [
            ("null", true),
            ("{}", true),
            (r#"{"a":1,"a":[2]}"#, true),
            (r#"{"t":"\ud83d\ude00"}"#, true),
            ("[]", false),
            ("1", false),
            (r#""x""#, false),
            // The raw scan accepts these; `Value`'s decode does not.
            (r#"{"n":1e400}"#, false),
            (r#"{"s":"\ud800"}"#, false),
            (r#"{"\udc00":1}"#, false),
        ] {
            assert_eq!(both(text), Some((ok, ok)), "{text}");
        }
        // The scan settles the plain ones; anything it is unsure of is walked.
        for (text, plain) in [
            (r#"{"a":[1,-2.5,true,false,null,"x\"y\\","\u0041"]}"#, true),
            (r#"{"a":1e5}"#, false),
            (r#"{"a":"\uD83D\uDE00"}"#, false),
            (r#"{"a":"\\uD800"}"#, true),
        ] {
            assert_eq!(plainly_typable(text.as_bytes()), plain, "{text}");
            assert_eq!(both(text), Some((true, true)), "{text}");
        }
        // serde_json's recursion limit (128) applies to both.
        for depth in 120..136 {
            let text = format!("{{\"a\":{}{}}}", "[".repeat(depth), "]".repeat(depth));
            let (typed, walked) = both(&text).expect("valid JSON");
            assert_eq!(typed, walked, "depth {depth}");
        }
    }

    fn any_text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("-0.5".to_owned()),
            Just("18446744073709551616".to_owned()),
            Just("1e400".to_owned()),
            Just("1E+2".to_owned()),
            Just("2.5e-3".to_owned()),
            Just("1".repeat(301)),
            Just(format!("{}1{}", "[".repeat(66), "]".repeat(66))),
            Just(format!("{}1{}", "[".repeat(130), "]".repeat(130))),
            Just(r#""\\u0041""#.to_owned()),
            Just(r#""\\uD83D\\uDE00""#.to_owned()),
            Just(r#""\uD83D\uDE00""#.to_owned()),
            Just(r#""\uDE00""#.to_owned()),
            Just(r#""a\n""#.to_owned()),
            Just(r#""\ud800""#.to_owned()),
            Just(r#""\ud83d\ude00""#.to_owned()),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec(
                    (
                        prop_oneof![Just(r#""k""#), Just(r#""\udc00""#), Just(r#""\u00e9""#)],
                        inner
                    ),
                    0..4
                )
                .prop_map(|m| {
                    let members: Vec<String> =
                        m.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_walk_agrees_with_the_decode(text in any_text()) {
            both(&text);
        }
    }
}
