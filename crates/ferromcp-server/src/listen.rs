//! `subscriptions/listen` logic shared by the transports: which
//! notifications a stream honours, the acknowledgement, and rendering of
//! changes tagged with the subscription id.
// SUB-*, META-11

use crate::notify::Change;
use crate::session::HandshakeSession;
use crate::shared::Shared;
use bytes::Bytes;
use ferromcp_protocol::jsonrpc::{OutgoingNotification, OutgoingResult, RequestId, to_vec};
use ferromcp_protocol::meta::SUBSCRIPTION_ID;
use ferromcp_protocol::types::{
    Meta, NotificationParams, ResourceUpdatedNotificationParams, SubscriptionFilter,
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenResult,
};

// SUB-03
/// The subset of `requested` this server will deliver: types the
/// server does not support are left out.
pub(crate) fn honoured(shared: &Shared, requested: &SubscriptionFilter) -> SubscriptionFilter {
    let yes =
        |asked: Option<bool>, supported: bool| (asked == Some(true) && supported).then_some(true);
    let reg = shared.registry();
    SubscriptionFilter {
        tools_list_changed: yes(requested.tools_list_changed, shared.has_tools(&reg)),
        prompts_list_changed: yes(requested.prompts_list_changed, shared.has_prompts(&reg)),
        resources_list_changed: yes(requested.resources_list_changed, shared.has_resources(&reg)),
        resource_subscriptions: if shared.declare().resource_subscribe {
            requested
                .resource_subscriptions
                .clone()
                .filter(|v| !v.is_empty())
        } else {
            None
        },
    }
}

// SUB-03
/// The acknowledgement, the first message of a stream.
pub(crate) fn acknowledgement(id: &RequestId, filter: &SubscriptionFilter) -> Bytes {
    let params = SubscriptionsAcknowledgedNotificationParams::new(id, filter.clone());
    Bytes::from(to_vec(&OutgoingNotification::new(
        "notifications/subscriptions/acknowledged",
        Some(&params),
    )))
}

// SUB-10
/// The listen result ending a stream gracefully.
pub(crate) fn ended(id: &RequestId) -> Bytes {
    Bytes::from(to_vec(&OutgoingResult::new(
        id,
        SubscriptionsListenResult::ended(id),
    )))
}

fn sub_meta(id: &RequestId) -> Meta {
    let mut m = Meta::new();
    m.insert(SUBSCRIPTION_ID.to_owned(), id.to_value());
    m
}

fn matches_uri(subscribed: &[String], uri: &str) -> bool {
    subscribed.iter().any(|s| {
        uri == s
            || (uri.starts_with(s.as_str())
                && (s.ends_with('/') || uri[s.len()..].starts_with('/')))
    })
}

// SUB-02
/// Renders `change` for a listen stream with `filter`, tagged with the
/// subscription id; `None` when the stream did not ask for it.
pub(crate) fn render_for_listen(
    change: &Change,
    filter: &SubscriptionFilter,
    id: &RequestId,
) -> Option<Bytes> {
    let method = match change {
        Change::ToolsListChanged if filter.tools_list_changed == Some(true) => {
            "notifications/tools/list_changed"
        }
        Change::PromptsListChanged if filter.prompts_list_changed == Some(true) => {
            "notifications/prompts/list_changed"
        }
        Change::ResourcesListChanged if filter.resources_list_changed == Some(true) => {
            "notifications/resources/list_changed"
        }
        Change::ResourceUpdated(uri) => {
            let subs = filter.resource_subscriptions.as_deref()?;
            if !matches_uri(subs, uri) {
                return None;
            }
            let params = ResourceUpdatedNotificationParams {
                uri: uri.clone(),
                meta: Some(sub_meta(id)),
            };
            return Some(Bytes::from(to_vec(&OutgoingNotification::new(
                "notifications/resources/updated",
                Some(&params),
            ))));
        }
        _ => return None,
    };
    let params = NotificationParams {
        meta: Some(sub_meta(id)),
    };
    Some(Bytes::from(to_vec(&OutgoingNotification::new(
        method,
        Some(&params),
    ))))
}

/// Renders `change` for a handshake-era session stream (no subscription id;
/// resource updates only for URIs the session subscribed to).
pub(crate) fn render_for_session(
    shared: &Shared,
    change: &Change,
    session: &HandshakeSession,
) -> Option<Bytes> {
    let reg = shared.registry();
    let method = match change {
        Change::ToolsListChanged if shared.has_tools(&reg) => "notifications/tools/list_changed",
        Change::PromptsListChanged if shared.has_prompts(&reg) => {
            "notifications/prompts/list_changed"
        }
        Change::ResourcesListChanged if shared.has_resources(&reg) => {
            "notifications/resources/list_changed"
        }
        Change::ResourceUpdated(uri)
            if shared.declare().resource_subscribe && session.is_subscribed(uri) =>
        {
            let params = ResourceUpdatedNotificationParams {
                uri: uri.clone(),
                meta: None,
            };
            return Some(Bytes::from(to_vec(&OutgoingNotification::new(
                "notifications/resources/updated",
                Some(&params),
            ))));
        }
        _ => return None,
    };
    Some(Bytes::from(to_vec(&OutgoingNotification::<()>::new(
        method, None,
    ))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_requested_kinds_are_rendered_and_tagged() {
        let f = SubscriptionFilter {
            prompts_list_changed: Some(true),
            resource_subscriptions: Some(vec!["test://a".into()]),
            ..Default::default()
        };
        let id = RequestId::string("listen-1");
        assert!(render_for_listen(&Change::ToolsListChanged, &f, &id).is_none());
        let b = render_for_listen(&Change::PromptsListChanged, &f, &id).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap_or_default();
        assert_eq!(
            v["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            json!("listen-1")
        );
        assert!(
            render_for_listen(&Change::ResourceUpdated("test://a/b".into()), &f, &id).is_some()
        );
        assert!(render_for_listen(&Change::ResourceUpdated("test://ab".into()), &f, &id).is_none());
        // Integer ids keep their JSON type.
        let b = render_for_listen(&Change::PromptsListChanged, &f, &RequestId::number(7))
            .unwrap_or_default();
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap_or_default();
        assert_eq!(
            v["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            json!(7)
        );
    }
}
