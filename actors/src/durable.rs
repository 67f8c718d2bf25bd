//! Replying after the group flush, without blocking the actor.

use ractor::RpcReplyPort;
use tessera_storage::flusher::Ticket;

/// Sends `value` on `reply` once `ticket` resolves (every write applied before it is on disk).
/// The actor returns at once and takes its next message; the caller sees the reply only when
/// the write is durable. A failed flush turns the reply into `on_flush_error`.
pub fn reply_when_durable<T, E>(
    ticket: Ticket,
    reply: RpcReplyPort<Result<T, E>>,
    value: Result<T, E>,
    on_flush_error: impl FnOnce(String) -> E + Send + 'static,
) where
    T: Send + 'static,
    E: Send + 'static,
{
    tokio::spawn(async move {
        let out = match ticket.wait().await {
            Ok(()) => value,
            Err(e) => {
                tracing::error!(error = %e, "a write could not be made durable");
                Err(on_flush_error(e.to_string()))
            }
        };
        let _ = reply.send(out);
    });
}
