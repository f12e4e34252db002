// Signals on notifications (fcntl O_ASYNC + F_SETOWN/F_SETOWN_EX/F_SETSIG on
// the context's descriptor), which FUSE files do not deliver by themselves.
// A descriptor gets signals while it has an owner: the kernel silently drops
// O_ASYNC on FUSE files (no fasync operation), so F_GETFL never shows it;
// F_SETOWN 0 stops the signals.
//
// A watcher thread waits on an epoll set holding every context's msg
// descriptor (edge-triggered: the daemon wakes pollers once per
// notification, a queued message or a mask under no_msg), reads the owner
// and signal the program set on that descriptor (the kernel's F_GETOWN_EX,
// or the thread noteOwner kept where that says 0), and asks a signaller
// thread to send it. The signaller has a private descriptor table in which
// it puts a fresh pipe at the same descriptor number, gives it the same
// owner and signal, and writes one byte: the kernel itself then sends the
// signal exactly as it would for the program's descriptor (si_code POLL_IN,
// si_fd, si_band POLLIN|POLLRDNORM, the owner's permission rules), which no
// sigqueue from another thread may do. Neither thread ever holds a copy of
// the program's descriptor, so close() still destroys the session.
#pragma once

#include <stdint.h>

namespace pfmcompat {

// Adds a new context's descriptor; starts the threads on first use (again
// in a child after fork, for the contexts it creates itself: the parent's
// threads keep serving the descriptors they share with the child).
void watchContext(int fd, uint32_t generation);

// The owner a program has just set on a context's descriptor with fcntl
// (fcntl_interpose.cpp): F_SETOWN's reading (F_OWNER_PID, or F_OWNER_PGRP
// for a negative id) or F_SETOWN_EX's type, and the id as given. The
// watcher asks the kernel for the owner (F_GETOWN_EX) at each notification,
// which answers 0 for a thread id that is not its process's under
// F_OWNER_PID (what F_SETOWN of gettid() sets): the kernel keeps that
// thread and would signal it (the signal aimed at the process, taken by
// that thread if it does not block it), so this one is remembered and used
// then, while it is a live thread of this process. fd is the descriptor the
// context was created on. Lock-free and allocation-free: a signal handler
// may call fcntl.
void noteOwner(int fd, uint32_t generation, int type, int id);

// Returns once the signal of every notification the daemon had made on fd's
// session before now is sent (pending in its owner), or after a second:
// what pfm_stop and pfm_unload_context wait for. On perfmon2 the signal came
// from the overflow's interrupt in the thread itself, never after the stop
// that followed; here it comes from the watcher and the signaller, and a
// program that tore down its handler's state after pfm_stop would get it
// late (PAPI: "thread == NULL in _papi_pfm_dispatch_timer"). A fence goes
// through the watcher's epoll set behind fd's pending events, then through
// the signaller's queue behind their requests. Nothing to wait for on a
// descriptor without an owner, or without the threads.
void drainNotifications(int fd);

}  // namespace pfmcompat
