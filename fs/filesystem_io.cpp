// Filesystem's file operations: open and release, what a read of each file
// shows (render), writes and ctl commands mapped onto the engine, and poll.
#include "fs/filesystem.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <span>
#include <vector>

#include "fs/capabilities.h"
#include "fs/filesystem_internal.h"
#include "fs/log.h"
#include "fs/text_format.h"

namespace pfmfs::fs {

using session::Session;
using namespace detail;

void Filesystem::open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  NodePtr n = inodes_.get(ino);
  if (!n) return (void)fuse_reply_err(req, ENOENT);
  if (n->isDir()) return (void)fuse_reply_err(req, EISDIR);
  if (!mayUse(req, *n)) return (void)fuse_reply_err(req, EACCES);
  if (n->session && !n->session->alive) return (void)fuse_reply_err(req, ENOENT);
  int acc = fi->flags & O_ACCMODE;
  // Root passes the kernel's mode-bit checks; the file's nature does not change for it.
  if ((acc != O_WRONLY && !readable(*n)) || (acc != O_RDONLY && !writable(*n)))
    return (void)fuse_reply_err(req, EACCES);
  if (n->kind == NodeKind::SimAdvance && fuse_req_ctx(req)->uid != 0) return (void)fuse_reply_err(req, EACCES);
  auto* of = open_files_.add(new OpenFile{n, {}, {}, {}});
  if (acc != O_RDONLY && judgedByOpener(*n)) of->opener = callerOf(req, true);
  fi->fh = reinterpret_cast<std::uint64_t>(of);
  fi->direct_io = 1;  // content changes: no page cache, sizes do not matter
  if (isMessageFile(*n)) fi->nonseekable = 1;
  const bool counted = isMessageFile(*n);
  if (counted) ++n->session->open_files;
  if (fuse_reply_open(req, fi) != 0) {
    if (counted) --n->session->open_files;
    open_files_.remove(of);
    return;
  }
  // The first message file open: the session now lives as long as its handles.
  if (counted)
    if (pid_t c = n->session->creator.exchange(0); c != 0 && watcher_) watcher_->unwatch(c);
}

void Filesystem::release(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  auto* of = reinterpret_cast<OpenFile*>(fi->fh);
  std::shared_ptr<SessionEntry> e = of->node->session;
  if (e && isMessageFile(*of->node)) e->waiters->forgetFile(of);
  const bool counted = e && isMessageFile(*of->node);
  open_files_.remove(of);
  fuse_reply_err(req, 0);
  if (!counted || --e->open_files != 0 || !e->alive || !e->session->flags().autoclose) return;
  // autoclose: the last handle on its message files closed (libpfm-compat's descriptor).
  autoclose(e);
}

Result<std::string> Filesystem::render(const Node& n) {
  switch (n.kind) {
    case NodeKind::Version:
      return formatVersion();
    case NodeKind::PmuInfo:
      return formatPmuInfo(engine_.backend(), engine_.options().tick_ns, fastpath_);
    case NodeKind::PmuEvents:
      return formatEvents(desc_);
    case NodeKind::DescModel:
      return desc_.model + "\n";
    case NodeKind::DescField: {
      if (n.pmd) {
        const pmu::PmdDesc* d = desc_.pmd(n.reg);
        switch (n.descField()) {
          case DescField::Name:
            return d->name + "\n";
          case DescField::Addr:
            return hex(d->addr);
          case DescField::Width:
            return fmt::format("{}\n", d->width);
          case DescField::RsvdMsk:
            return hex(0);  // every bit of a counter is writable
          case DescField::DflVal:
          case DescField::Pmds:
            break;
        }
      } else {
        const pmu::PmcDesc* d = desc_.pmc(n.reg);
        switch (n.descField()) {
          case DescField::Name:
            return d->name + "\n";
          case DescField::Addr:
            return hex(d->addr);
          case DescField::DflVal:
            return hex(d->dfl_val);
          case DescField::RsvdMsk:
            return hex(d->rsvd_mask);
          case DescField::Pmds: {
            // The counters this PMC configures (libpfm-compat's dispatch needs it).
            pmu::RegMask m = 0;
            for (const auto& pmd : desc_.pmds)
              if (pmd.ctl_pmc == d->index) m |= pmu::RegMask{1} << pmd.index;
            return hex(m);
          }
          case DescField::Width:
            break;
        }
      }
      return err(ENOENT, "no such field");
    }
    case NodeKind::SessionFile: {
      Session& s = *n.session->session;
      switch (n.sessionFile()) {
        case SessionFile::Mode:
          return formatMode(s.mode());
        case SessionFile::Flags:
          return formatFlags(s.flags());
        case SessionFile::State:
          return formatState(s.state());
        case SessionFile::Error: {
          std::string e = s.error();
          return e.empty() ? e : e + "\n";
        }
        case SessionFile::Counts:
          return formatCounts(s.counts());
        default:
          break;
      }
      return err(EACCES, "not readable");
    }
    case NodeKind::SetFile: {
      Session& s = *n.session->session;
      switch (n.setFile()) {
        case SetFile::Pmc: {
          auto v = s.readPmc(n.set, n.reg);
          if (!v) return v.error();
          return formatPmc(*v);
        }
        case SetFile::Pmd: {
          auto v = s.readPmd(n.set, n.reg);
          if (!v) return v.error();
          return formatPmd(v->value);
        }
        case SetFile::Regs: {
          auto v = s.regs(n.set);
          if (!v) return v.error();
          return formatRegs(*v);
        }
        case SetFile::Pmds: {
          auto v = s.pmdStates(n.set);
          if (!v) return v.error();
          return formatPmdStates(*v);
        }
        case SetFile::Switch: {
          auto v = s.setInfo(n.set);
          if (!v) return v.error();
          return formatSwitch(v->switch_spec);
        }
        case SetFile::Info: {
          auto v = s.setInfo(n.set);
          if (!v) return v.error();
          return formatSetInfo(*v);
        }
      }
      return err(ENOENT, "no such file");
    }
    default:
      return err(EACCES, "not readable");
  }
}

void Filesystem::read(fuse_req_t req, fuse_ino_t, std::size_t size, off_t off, fuse_file_info* fi) {
  auto* of = reinterpret_cast<OpenFile*>(fi->fh);
  const Node& n = *of->node;
  if (n.session && !n.session->alive && !isMessageFile(n)) return (void)fuse_reply_err(req, ENOENT);
  if (isMessageFile(n)) {
    bool binary = n.sessionFile() == SessionFile::Msg;
    return n.session->waiters->read(req, size, binary, (fi->flags & O_NONBLOCK) != 0);
  }
  // The reply is sent after the handle is let go of: once the kernel has it,
  // the reader may close, and the release may free `of` on another thread.
  // An error reply too: replying under of->mutex let a release free the
  // mutex before its unlock (seen under TSan in the storm test).
  std::string chunk;
  int error = 0;
  {
    std::lock_guard lock(of->mutex);
    if (off == 0) {
      auto text = render(n);
      if (text) {
        of->text = std::move(*text);
      } else {
        error = -text.code();
      }
    }
    if (!error && off >= 0 && static_cast<std::size_t>(off) < of->text.size())
      chunk = of->text.substr(static_cast<std::size_t>(off), size);
  }
  if (error) return (void)fuse_reply_err(req, error);
  fuse_reply_buf(req, chunk.data(), chunk.size());
}

void Filesystem::write(fuse_req_t req, fuse_ino_t, const char* buf, std::size_t size, fuse_file_info* fi) {
  auto* of = reinterpret_cast<OpenFile*>(fi->fh);
  const Node& n = *of->node;
  if (n.session && !n.session->alive) return (void)fuse_reply_err(req, ENOENT);
  // The kernel hands a write longer than its max_write (about 1 MiB, less
  // when the buffer is not page-aligned) over in pieces, each a write of its
  // own: of a value padded with blanks the first piece was taken and the
  // rest refused, a partial write that pfmfs(5) says never happens. No value
  // or command comes near kMaxWrite and a first piece is always longer, so
  // such a write is refused at its first piece, and the kernel sends no more.
  if (size > kMaxWrite) {
    Error e = err(EINVAL, "write of {} bytes or more: a value or command is at most {} bytes", size, kMaxWrite);
    if (n.session) (void)n.session->session->refuse(e);
    log(LogLevel::Debug, "write {}: {}", n.name, e.reason);
    return (void)fuse_reply_err(req, EINVAL);
  }
  Status st = writeTo(*of, std::string_view(buf, size));
  // Pollers hear of every message queued before this write (by the ticker,
  // say) before the writer hears of its end: libpfm-compat's pfm_stop relies
  // on it to send a notification's signal before it returns.
  if (n.session) n.session->session->awaitNotifications();
  if (!st) {
    log(LogLevel::Debug, "write {}: {}", n.name, st.error().reason);
    return (void)fuse_reply_err(req, -st.code());
  }
  fuse_reply_write(req, size);
}

Status Filesystem::writeTo(const OpenFile& of, std::string_view text) {
  const Node& n = *of.node;
  if (n.kind == NodeKind::SimAdvance) {
    auto ns = parseAdvance(text);
    if (!ns) return ns.error();
    return engine_.advanceManualClock(*ns);
  }
  if (!n.session) return err(EACCES, "read-only file");
  Session& s = *n.session->session;
  if (n.kind == NodeKind::SessionFile) {
    switch (n.sessionFile()) {
      case SessionFile::Mode: {
        auto m = parseMode(text);
        return m ? s.setMode(*m) : s.refuse(m.error());
      }
      case SessionFile::Flags: {
        auto f = parseFlags(text);
        return f ? s.setFlags(*f) : s.refuse(f.error());
      }
      case SessionFile::Ctl:
        return control(of.opener, *n.session, text);
      default:
        return err(EACCES, "read-only file");
    }
  }
  if (n.kind != NodeKind::SetFile) return err(EACCES, "read-only file");
  switch (n.setFile()) {
    case SetFile::Pmc: {
      auto w = parsePmcWrite(desc_, n.reg, text);
      return w ? s.writePmc(of.opener, n.set, *w) : s.refuse(w.error());
    }
    case SetFile::Pmd: {
      auto w = parsePmdWrite(n.reg, text);
      return w ? s.writePmd(n.set, *w) : s.refuse(w.error());
    }
    case SetFile::Regs: {
      auto w = parseRegs(desc_, text);
      return w ? s.writeRegs(of.opener, n.set, *w) : s.refuse(w.error());
    }
    case SetFile::Switch: {
      auto w = parseSwitch(text);
      return w ? s.setSwitch(n.set, *w) : s.refuse(w.error());
    }
    case SetFile::Pmds:
    case SetFile::Info:
      break;
  }
  return err(EACCES, "read-only file");
}

Status Filesystem::control(const session::Caller& opener, SessionEntry& e, std::string_view text) {
  Session& s = *e.session;
  auto cmd = parseCtl(text);
  if (!cmd) return s.refuse(cmd.error());
  using Kind = CtlCommand::Kind;
  switch (cmd->kind) {
    case Kind::Load: {
      Status st = s.load(opener, cmd->target, cmd->set);
      if (st && s.mode() == session::Mode::Thread && watcher_) watcher_->watch(cmd->target);
      return st;
    }
    case Kind::Start:
      return s.start(cmd->set);
    case Kind::Stop:
      return s.stop();
    case Kind::Restart:
      return s.restart();
    case Kind::Unload: {
      auto target = s.loadedTarget();
      Status st = s.unload();
      if (st && target && target->kind == pmu::TargetKind::Thread && watcher_) watcher_->unwatch(target->id);
      return st;
    }
  }
  return s.refuse(err(EINVAL, "unknown command"));
}

void Filesystem::poll(fuse_req_t req, fuse_ino_t, fuse_file_info* fi, fuse_pollhandle* ph) {
  auto* of = reinterpret_cast<OpenFile*>(fi->fh);
  if (!isMessageFile(*of->node)) {
    // Other files are always ready, as regular files are.
    if (ph) fuse_pollhandle_destroy(ph);
    return (void)fuse_reply_poll(req, POLLIN | POLLOUT);
  }
  fuse_reply_poll(req, of->node->session->waiters->poll(of, ph));
}

}  // namespace pfmfs::fs
