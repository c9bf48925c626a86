//! How a tool takes part in the tasks extension: what a tool definition
//! declares, apart from the machinery that runs tasks.

/// Whether a tool may run as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskSupport {
    /// Never: always a plain call (the default).
    #[default]
    Forbidden,
    /// As a task when the client declared the extension, else a plain call.
    Optional,
    /// Only as a task: a client without the extension gets -32021.
    Required,
}

/// When a task-supporting tool's call becomes a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskCreation {
    /// Before the handler runs: `tools/call` answers with the task at once.
    #[default]
    Immediate,
    /// When the handler calls [`crate::RequestContext::run_as_task`]; until then
    /// the call is an ordinary one (it may answer `input_required`, or
    /// finish without a task).
    OnRequest,
}
