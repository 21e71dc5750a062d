//! CUDA graphs of validated launches: captured once, replayed with one driver call, given new
//! arguments launch by launch without being captured again.
//!
//! A decoder's step is a few hundred small launches whose host-side cost (validation, the
//! driver's launch path) and launch gaps are a sizeable share of the step. [`Capture`] records
//! a sequence of launches on a stream of its own (the device's stream is the legacy default
//! stream, which cannot be captured): each is validated as [`Device::launch`](crate::Device::launch) validates it,
//! then issued on the capturing stream, where it becomes a kernel node instead of running.
//! [`Capture::finish`] instantiates the graph; [`Graph::replay`] launches it on the device's
//! stream, ordered after everything already queued there.
//!
//! The arguments that change between replays (a decode step's position, the views of one
//! row of a table) are given by running the same sequence of launches again through
//! [`Graph::update`]: launch `i` of the update is compared with node `i` of the graph. Equal
//! arguments cost one comparison (they were validated at capture); changed ones are validated
//! again and must need the same grid, block and shared memory of the same kernel, and then
//! become the node's new parameters (`cuGraphExecKernelNodeSetParams`). Another kernel, another
//! grid, more or fewer launches: the update is refused with an error that names the launch,
//! and the graph refuses to replay until an update completes — a graph is never replayed with
//! parameters it was not checked for.

use crate::{drv, launch_grid, launch_on, validate, ArgDesc, Kernel, LaunchPlan, ParamValue, RuntimeError};
use cudarc::driver::sys;
use cudarc::driver::{CudaGraph, CudaStream};
use std::sync::Arc;

fn graph_error(msg: impl Into<String>) -> RuntimeError {
    RuntimeError::Graph(msg.into())
}

/// One captured launch.
struct Node {
    kernel: Arc<Kernel>,
    args: Vec<ArgDesc>,
    plan: LaunchPlan,
    /// The kernel node; `None` for a launch with an empty grid (nothing ran), kept so that an
    /// update is compared launch by launch.
    node: Option<sys::CUgraphNode>,
    /// Captured with a programmatic edge from the launch before (see
    /// [`LaunchPlan::may_follow_early`]): an update must keep that safe.
    programmatic: bool,
}

/// A graph being captured ([`crate::Device::begin_capture`]).
pub struct Capture {
    /// The capturing stream.
    stream: Arc<CudaStream>,
    /// The stream the graph replays on (the device's).
    replay: Arc<CudaStream>,
    nodes: Vec<Node>,
    open: bool,
    /// The device's [`crate::Device::programmatic_launch`].
    programmatic: bool,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Capture({} launches)", self.nodes.len())
    }
}

impl Capture {
    pub(crate) fn begin(device_stream: &Arc<CudaStream>, programmatic: bool) -> Result<Capture, RuntimeError> {
        let stream = device_stream.context().new_stream().map_err(drv)?;
        // Thread-local: a call on this thread that a capture forbids (a synchronous copy, a
        // context synchronisation) fails instead of breaking the capture silently.
        stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).map_err(drv)?;
        Ok(Capture { stream, replay: device_stream.clone(), nodes: vec![], open: true, programmatic })
    }

    /// Validates a launch of `kernel` with `args` and records it as the graph's next node;
    /// returns its index.
    pub fn launch(&mut self, kernel: &Arc<Kernel>, args: &[ArgDesc]) -> Result<usize, RuntimeError> {
        let plan = validate(&kernel.signature, args, None)?;
        let programmatic = self.programmatic && !plan.empty && plan.may_follow_early(&writes_before(&self.nodes));
        let node = if plan.empty {
            None
        } else {
            launch_on(&self.stream, kernel, &plan, programmatic)?;
            Some(self.last_node()?)
        };
        self.nodes.push(Node { kernel: kernel.clone(), args: args.to_vec(), plan, node, programmatic });
        Ok(self.nodes.len() - 1)
    }

    /// The node the last launch added: on one stream, the capture's only dependency.
    fn last_node(&self) -> Result<sys::CUgraphNode, RuntimeError> {
        let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        let mut id = 0u64;
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        let mut deps: *const sys::CUgraphNode = std::ptr::null();
        let mut edges: *const sys::CUgraphEdgeData = std::ptr::null();
        let mut n = 0usize;
        self.stream.context().bind_to_thread().map_err(drv)?;
        // SAFETY: every out-pointer is to a local; the returned arrays belong to the driver
        // and are read before the next call on this stream.
        unsafe {
            sys::cuStreamGetCaptureInfo_v3(
                self.stream.cu_stream(),
                &mut status,
                &mut id,
                &mut graph,
                &mut deps,
                &mut edges,
                &mut n,
            )
        }
        .result()
        .map_err(drv)?;
        if status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE || n != 1 || deps.is_null() {
            return Err(graph_error(format!(
                "the capture is {status:?} with {n} open nodes after launch {}: it was invalidated (a call the capture forbids?)",
                self.nodes.len()
            )));
        }
        // SAFETY: `n == 1`: `deps` points at one node handle.
        Ok(unsafe { *deps })
    }

    /// Ends the capture and instantiates the graph.
    pub fn finish(mut self) -> Result<Graph, RuntimeError> {
        self.open = false;
        let exec = self.stream.end_capture(sys::CUgraphInstantiate_flags(0)).map_err(drv)?;
        let nodes = std::mem::take(&mut self.nodes);
        if let Some(g) = &exec {
            self.stream.context().bind_to_thread().map_err(drv)?;
            // SAFETY: the executable graph is alive (owned by `g`); uploading only stages it
            // on the device ahead of the first replay.
            unsafe { cudarc::driver::result::graph::upload(g.cu_graph_exec(), self.replay.cu_stream()) }
                .map_err(drv)?;
        }
        Ok(Graph { exec, replay: Some(self.replay.clone()), nodes, stale: None, cursor: 0 })
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if self.open {
            // A capture abandoned on an error: end it (its graph is dropped), so that the
            // stream is usable and nothing half-captured survives.
            let _ = self.stream.end_capture(sys::CUgraphInstantiate_flags(0));
        }
    }
}

/// An instantiated graph of launches ([`Capture::finish`]).
pub struct Graph {
    /// `None`: nothing was captured (every launch had an empty grid).
    exec: Option<CudaGraph>,
    replay: Option<Arc<CudaStream>>,
    nodes: Vec<Node>,
    /// Why the graph may not replay (an update under way or refused).
    stale: Option<String>,
    /// The next launch an update compares.
    cursor: usize,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Graph({} launches{})", self.nodes.len(), if self.stale.is_some() { ", stale" } else { "" })
    }
}

impl Graph {
    /// A graph with nothing in it that refuses to replay: what stands in a caller's place
    /// while its graph is being updated elsewhere.
    pub fn placeholder() -> Graph {
        Graph { exec: None, replay: None, nodes: vec![], stale: Some("it is being updated".into()), cursor: 0 }
    }

    /// Launches captured (empty ones included).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph holds no launch.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The kernel names of the launches, in order.
    pub fn kernels(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().map(|n| n.kernel.signature.name.as_str())
    }

    /// Launches the graph on the device's stream (asynchronously).
    pub fn replay(&self) -> Result<(), RuntimeError> {
        if let Some(why) = &self.stale {
            return Err(graph_error(format!("the graph cannot replay: {why}")));
        }
        let (Some(g), Some(stream)) = (&self.exec, &self.replay) else { return Ok(()) };
        stream.context().bind_to_thread().map_err(drv)?;
        // SAFETY: the executable graph is alive, and every node's parameters were validated
        // against its kernel (at capture or by the last completed update).
        unsafe { cudarc::driver::result::graph::launch(g.cu_graph_exec(), stream.cu_stream()) }.map_err(drv)
    }

    /// Starts an update: the next [`Graph::update`] is compared with the first launch.
    pub fn begin_update(&mut self) {
        self.cursor = 0;
        self.stale = Some("an update is under way".into());
    }

    /// The update's next launch: `kernel` with `args` for node `i` (see the module docs).
    pub fn update(&mut self, kernel: &Arc<Kernel>, args: &[ArgDesc]) -> Result<(), RuntimeError> {
        let i = self.cursor;
        let result = self.update_node(i, kernel, args);
        match &result {
            Ok(()) => self.cursor += 1,
            Err(e) => self.stale = Some(format!("its last update was refused ({e})")),
        }
        result
    }

    fn update_node(&mut self, i: usize, kernel: &Arc<Kernel>, args: &[ArgDesc]) -> Result<(), RuntimeError> {
        let captured = self.nodes.len();
        let Some(node) = self.nodes.get(i) else {
            return Err(graph_error(format!(
                "the update launches `{}` as launch {}; the graph has {captured}",
                kernel.signature.name,
                i + 1
            )));
        };
        if !Arc::ptr_eq(&node.kernel, kernel) {
            return Err(graph_error(format!(
                "launch {i} was captured as `{}` ({}); the update launches `{}` ({}): capture the graph again",
                node.kernel.signature.name,
                node.kernel.signature.target,
                kernel.signature.name,
                kernel.signature.target
            )));
        }
        let plan = if node.args == args {
            None
        } else {
            let plan = validate(&kernel.signature, args, None)?;
            same_launch(i, &kernel.signature.name, &node.plan, &plan)?;
            Some(plan)
        };
        // The launches before this one were updated first (in order): what ran last writes
        // what its plan says now — this launch's arguments may be unchanged and still read
        // early what that one now writes.
        if node.programmatic && !plan.as_ref().unwrap_or(&node.plan).may_follow_early(&writes_before(&self.nodes[..i]))
        {
            return Err(graph_error(format!(
                "launch {i} (`{}`) was captured to start while the launch before it finished, reading its `independent` tensors early; after this update that launch writes memory they hold: capture the graph again",
                kernel.signature.name,
            )));
        }
        let Some(plan) = plan else { return Ok(()) };
        let node = &mut self.nodes[i];
        if let (Some(handle), Some(g)) = (node.node, &self.exec) {
            let [x, y, z] = launch_grid(kernel, &plan);
            let mut values = ParamValue::of(&plan)?;
            let mut ptrs: Vec<*mut std::ffi::c_void> = values.iter_mut().map(ParamValue::ptr).collect();
            let params = sys::CUDA_KERNEL_NODE_PARAMS_v2 {
                func: kernel.func.cu_function(),
                gridDimX: x,
                gridDimY: y,
                gridDimZ: z,
                blockDimX: plan.block,
                blockDimY: 1,
                blockDimZ: 1,
                sharedMemBytes: plan.dynamic_shared_bytes,
                kernelParams: ptrs.as_mut_ptr(),
                extra: std::ptr::null_mut(),
                kern: std::ptr::null_mut(),
                ctx: std::ptr::null_mut(),
            };
            if let Some(stream) = &self.replay {
                stream.context().bind_to_thread().map_err(drv)?;
            }
            // SAFETY: `validate` checked the new arguments against the kernel's ABI (the
            // values are in ABI order with ABI types, every tensor's range in its buffer);
            // the node is a kernel node of this executable graph running the same function
            // with the same grid; the driver copies the values before returning.
            unsafe { sys::cuGraphExecKernelNodeSetParams_v2(g.cu_graph_exec(), handle, &params) }
                .result()
                .map_err(drv)?;
        }
        node.args = args.to_vec();
        node.plan = plan;
        Ok(())
    }

    /// Ends an update: every launch of the graph must have been given.
    pub fn end_update(&mut self) -> Result<(), RuntimeError> {
        if self.cursor != self.nodes.len() {
            let e = graph_error(format!(
                "the update launched {} kernels; the graph has {}: capture the graph again",
                self.cursor,
                self.nodes.len()
            ));
            self.stale = Some(format!("its last update was refused ({e})"));
            return Err(e);
        }
        self.stale = None;
        Ok(())
    }
}

/// What the last launch among `nodes` that ran (a non-empty grid) writes.
fn writes_before(nodes: &[Node]) -> Vec<(u128, u128)> {
    nodes.iter().rev().find(|n| !n.plan.empty).map(|n| n.plan.writes.clone()).unwrap_or_default()
}

/// Whether launch `i` of `kernel` by `new` can take the place of its captured `old` plan in a
/// graph: the same grid, block and shared memory (only parameter values may change).
pub fn same_launch(i: usize, kernel: &str, old: &LaunchPlan, new: &LaunchPlan) -> Result<(), RuntimeError> {
    let shape = |p: &LaunchPlan| (p.empty, p.grid, p.block, p.dynamic_shared_bytes, p.words.len());
    if shape(old) == shape(new) {
        return Ok(());
    }
    let say = |p: &LaunchPlan| {
        if p.empty {
            "an empty grid (nothing to launch)".to_string()
        } else {
            format!("grid {:?}, {} threads, {} bytes of dynamic shared memory", p.grid, p.block, p.dynamic_shared_bytes)
        }
    };
    Err(graph_error(format!(
        "launch {i} (`{kernel}`) was captured with {}; the update's arguments need {}: capture the graph again",
        say(old),
        say(new)
    )))
}
