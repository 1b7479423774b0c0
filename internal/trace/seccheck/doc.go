// Package seccheck receives the exec trace that gVisor's runtime monitoring
// ("seccheck") streams to a host-side socket, and turns it into trace.Events.
// It provides the packet decoder (Decode), the socket listener that runsc's
// "remote" sink connects to (Listen, Listener.Collect), and the
// --pod-init-config file that makes runsc connect (PodInitConfig). It does not
// start runsc, classify shells, or attribute events to build steps; callers
// above it do.
//
// # Wire protocol
//
// runsc connects to an AF_UNIX SOCK_SEQPACKET socket before the sandbox
// boots, one connection per sandbox (runsc create or run). It sends a
// protobuf Handshake {1: version} (bytes 08 01 for version 1) and waits for
// the same message back; without a reply of version 1 or more it refuses to
// start the sandbox. Each later record is one point: an 8-byte little-endian
// header (u16 header_size, u16 message_type, u32 dropped_count), then a
// protobuf message starting at header_size. dropped_count is cumulative per
// connection: the number of points the sentry failed to send so far.
//
// Decode reads the messages by field number with protowire, so the gVisor
// module is not a dependency. The field numbers below were checked against
// the generated code of gvisor.dev/gvisor@v0.0.0-20260905035102-160fafc42237
// (pkg/sentry/seccheck/points):
//
//	type  1 container/start  Start:      1 context_data, 2 id, 3 cwd, 4 args, 5 env
//	type  2 sentry/clone     CloneInfo:  1 context_data, 3 created_thread_id,
//	                                     4 created_thread_group_id
//	type  3 sentry/execve    ExecveInfo: 1 context_data, 2 binary_path, 3 argv,
//	                                     4 env, 8 binary_sha256, 17 execfn
//	type  5 sentry/task_exit TaskExit:   1 context_data, 2 exit_status
//	type 11 syscall/execve and syscall/execveat
//	                         Execve:     1 context_data, 2 exit, 3 sysno, 4 fd,
//	                                     5 fd_path, 6 pathname, 7 argv, 8 envv
//	ContextData: 1 time_ns, 2 thread_id, 4 thread_group_id, 6 container_id,
//	             7 credentials, 8 cwd, 9 process_name,
//	             10 parent_thread_group_id, 11 is_exec_session
//	Credentials: 1 real_uid, 2 effective_uid (3..6 saved uid and the gids)
//
// execveat has no message type of its own: it arrives as type 11 with its
// own sysno (322 on amd64, 281 on arm64) and the fd and fd_path fields.
// Other message types are skipped, and so are unknown fields.
//
// # Mapping to trace.Event
//
//   - UID is the effective uid from the credentials. It is -1 when the
//     packet carries no credentials at all, so that "unknown" is not read as
//     root: proto3 omits a zero uid, but still sends the empty Credentials
//     message, which Decode reads as uid 0.
//   - A clone's ChildPID is created_thread_group_id. For a new thread
//     (CLONE_THREAD) that is the caller's own PID.
//   - A task exit is sent for every thread. The exit of a thread group is
//     the one whose TID equals its PID.
//   - An exec attempt (type 11) has no Binary, since the attempt may fail.
//     Its Execfn is the pathname as passed; for execveat with a relative or
//     empty pathname and a known fd_path it is fd_path joined with the
//     pathname. A type 11 message that carries an exit result (a
//     syscall/.../exit point) is not an event: those results are unreliable
//     in current runsc, and the config here does not ask for them.
//   - An exec's Digest is binary_sha256, the SHA-256 that the sentry
//     computed of the file it executed (for a script, the script), as
//     "sha256:<hex>"; a value that is not 32 bytes is dropped. The sentry
//     caches digests by mount, inode, size and mtime, so a file rewritten
//     in place with the same size and a restored mtime could keep its old
//     digest.
//   - container/start has the args of the OCI spec, unresolved, and no
//     Binary. Env is dropped unless Limits.KeepEnv is set, since it may hold
//     secrets.
//
// # Bounds
//
// Everything read from the socket is hostile input. Packets are at most
// Limits.MaxPacketBytes (larger records are cut by the kernel and reported);
// strings, argv and env are cut to Limits and the cut is flagged; a
// collection stores at most Options.MaxEvents events and about
// Options.MaxEventBytes bytes of strings. Malformed protobuf is an error.
//
// # When a collection is complete
//
// A Collection is Complete only if all of these hold:
//
//   - Listener.Finish was called (the caller saw every sandbox exit) before
//     Collect stopped, at least one connection arrived, none was refused
//     past Options.MaxConns, and accepting never failed;
//   - every connection sent a valid handshake and then ended with a clean
//     end of file: no read error, and no connection still open when Collect
//     stopped (ctx done or Close);
//   - no packet reported dropped_count > 0;
//   - no packet was larger than MaxPacketBytes or failed to decode, no value
//     was truncated, and no event was left unstored because of the bounds;
//   - for every container/start seen on a connection, the exit of that
//     container's init (TID = PID = the start's PID) was seen on the same
//     connection.
//
// SOCK_SEQPACKET delivers whole records, so a connection cannot end in the
// middle of a message as a stream can. What is left is the tail: a point
// that the sentry drops is only reported by the dropped_count of a later
// packet, so drops at the very end of a sandbox would go unseen. The init
// exit rule closes most of that gap: a sandbox cannot end normally without
// its init exiting, so a connection that ends before that exit arrived lost
// its tail (or the sandbox was killed from outside, which the caller knows).
// An end of file before Finish is not an error in itself, because with one
// sandbox per build step the early steps' connections end long before the
// whole build, and the sandbox's own exit closes its socket before runsc's
// parent reports the exit to the caller. Instead Collect judges every
// connection when it stops, and only a stop after Finish can be complete.
//
// After Finish, Collect still accepts connections that runsc queued before
// the sandbox exited, then stops listening, so that a runsc started later
// fails closed (its connect or handshake fails) instead of running untraced.
package seccheck
