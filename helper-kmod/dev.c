// SPDX-License-Identifier: GPL-2.0
/*
 * The device /dev/pfmfs_helper: open (CAP_SYS_RAWIO), the ioctls of
 * uapi/pfmfs_helper.h with every argument checked, read() and poll() of
 * the records, and close, which leaves nothing counting.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/pid_namespace.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "pfh.h"

/* A bad argument: logged (rate-limited), nothing changed. */
#define pfh_bad(ret, fmt, ...)						\
({									\
	pr_warn_ratelimited("pid %d (%s): " fmt "\n",			\
			    task_pid_nr(current), current->comm,	\
			    ##__VA_ARGS__);				\
	(ret);								\
})

static int pfh_open(struct inode *inode, struct file *file)
{
	struct pfh_file *f;
	int ret;

	if (!capable(CAP_SYS_RAWIO))
		return pfh_bad(-EPERM, "open: needs CAP_SYS_RAWIO");

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	if (!zalloc_cpumask_var(&f->touched, GFP_KERNEL)) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = pfh_ring_init(&f->ring, pfh_ring_records);
	if (ret)
		goto err_mask;
	INIT_LIST_HEAD(&f->targets);
	init_waitqueue_head(&f->wq);
	init_irq_work(&f->wake, pfh_ring_wake);
	mutex_init(&f->read_mutex);
	f->pid_ns = get_pid_ns(task_active_pid_ns(current));

	mutex_lock(&pfh_mutex);
	if (list_empty(&pfh_files)) {
		ret = pfh_activate();
		if (ret) {
			mutex_unlock(&pfh_mutex);
			pr_warn_ratelimited("pid %d (%s): open: the counters are busy\n",
					    task_pid_nr(current), current->comm);
			goto err_ns;
		}
	}
	list_add_tail(&f->node, &pfh_files);
	mutex_unlock(&pfh_mutex);

	file->private_data = f;
	return nonseekable_open(inode, file);

err_ns:
	put_pid_ns(f->pid_ns);
	pfh_ring_free(&f->ring);
err_mask:
	free_cpumask_var(f->touched);
err_free:
	kfree(f);
	return ret;
}

static int pfh_close(struct inode *inode, struct file *file)
{
	struct pfh_file *f = file->private_data;

	mutex_lock(&pfh_mutex);
	pfh_file_cleanup(f);
	list_del(&f->node);
	if (list_empty(&pfh_files))
		pfh_deactivate();
	mutex_unlock(&pfh_mutex);

	/* Probes and NMI handlers that found one of its targets are done. */
	synchronize_rcu();
	irq_work_sync(&f->wake);

	put_pid_ns(f->pid_ns);
	pfh_ring_free(&f->ring);
	free_cpumask_var(f->touched);
	kfree(f);
	return 0;
}

static long pfh_ioc_hello(struct pfh_file *f, void __user *uarg, u32 size)
{
	struct pfmfs_helper_hello h = { };
	const u32 head = offsetofend(struct pfmfs_helper_hello, size);

	if (size < head)
		return pfh_bad(-EINVAL, "HELLO: %u bytes", size);
	if (copy_from_user(&h, uarg, head))
		return pfh_bad(-EFAULT, "HELLO: bad address");
	if (h.abi_version != PFMFS_HELPER_ABI_VERSION || h.size != sizeof(h) ||
	    size != sizeof(h)) {
		pr_warn_ratelimited("pid %d (%s): HELLO: ABI %u size %u (ioctl %u), the module's is ABI %u size %zu\n",
				    task_pid_nr(current), current->comm,
				    h.abi_version, h.size, size,
				    PFMFS_HELPER_ABI_VERSION, sizeof(h));
		h.abi_version = PFMFS_HELPER_ABI_VERSION;
		h.size = sizeof(h);
		if (copy_to_user(uarg, &h, head))
			return -EFAULT;
		return -EPROTO;
	}
	h.arch_version = pfh_shape.version;
	h.gp_counters = pfh_shape.nr_gp;
	h.gp_width = pfh_shape.gp_width;
	h.fixed_counters = pfh_shape.nr_fixed;
	h.fixed_width = pfh_shape.fixed_width;
	h.flags = pfh_emulate ? PFMFS_HELPER_F_EMULATED : 0;
	h.nr_cpu_ids = nr_cpu_ids;
	h.ring_records = f->ring.mask + 1;
	h.record_size = sizeof(struct pfmfs_helper_record);
	h.skid = pfh_emulate ? pfh_skid : 0;
	if (copy_to_user(uarg, &h, sizeof(h)))
		return pfh_bad(-EFAULT, "HELLO: bad address");
	WRITE_ONCE(f->hello, true);
	return 0;
}

static bool pfh_cpu_ok(u32 cpu)
{
	return cpu < nr_cpu_ids && cpu_online(cpu);
}

static long pfh_ioc_batch(struct pfh_file *f, void __user *uarg, bool write)
{
	const char *what = write ? "MSR_WRITE" : "MSR_READ";
	struct pfmfs_helper_msr *ops;
	struct pfmfs_helper_batch b;
	struct pfh_target *t;
	unsigned int n;
	long ret;
	u32 i;

	if (copy_from_user(&b, uarg, sizeof(b)))
		return pfh_bad(-EFAULT, "%s: bad address", what);
	if (b.reserved || !b.count || b.count > PFMFS_HELPER_MAX_BATCH ||
	    b.target > PFMFS_HELPER_TARGET_CPU)
		return pfh_bad(-EINVAL, "%s: count %u target %u reserved %u",
			       what, b.count, b.target, b.reserved);
	ops = kmalloc_array(b.count, sizeof(*ops), GFP_KERNEL);
	if (!ops)
		return -ENOMEM;
	if (copy_from_user(ops, u64_to_user_ptr(b.ops), b.count * sizeof(*ops))) {
		ret = pfh_bad(-EFAULT, "%s: bad ops address", what);
		goto out;
	}
	for (i = 0; i < b.count; i++) {
		if (ops[i].reserved) {
			ret = pfh_bad(-EINVAL, "%s: op %u: reserved %u", what,
				      i, ops[i].reserved);
			goto out;
		}
	}
	for (i = 0; i < b.count; i++) {
		if (pfh_msr_classify(ops[i].msr, &n) == PFH_K_NONE) {
			atomic64_inc(&pfh_stats.refused);
			ret = pfh_bad(-EPERM, "%s: MSR 0x%x is not on the allowlist: batch refused",
				      what, ops[i].msr);
			goto out;
		}
	}

	mutex_lock(&pfh_mutex);
	if (b.target == PFMFS_HELPER_TARGET_CPU) {
		if (!pfh_cpu_ok(b.id))
			ret = pfh_bad(-EINVAL, "%s: no online cpu %u", what, b.id);
		else
			ret = pfh_batch_cpu(f, b.id, ops, b.count, write);
	} else {
		t = pfh_file_target(f, PFMFS_HELPER_TARGET_THREAD, b.id);
		if (!t)
			ret = pfh_bad(-EINVAL, "%s: thread %u is not attached by this opener",
				      what, b.id);
		else
			ret = pfh_batch_thread(t, ops, b.count, write);
	}
	mutex_unlock(&pfh_mutex);

	if (!write && (!ret || ret == -EIO) &&
	    copy_to_user(u64_to_user_ptr(b.ops), ops, b.count * sizeof(*ops)))
		ret = pfh_bad(-EFAULT, "%s: bad ops address", what);
out:
	kfree(ops);
	return ret;
}

static long pfh_ioc_target(struct pfh_file *f, unsigned int cmd,
			   void __user *uarg)
{
	struct pfmfs_helper_target a;
	struct pfh_target *t = NULL;
	const char *what;
	long ret = 0;

	switch (cmd) {
	case PFMFS_HELPER_IOC_ATTACH:
		what = "ATTACH";
		break;
	case PFMFS_HELPER_IOC_DETACH:
		what = "DETACH";
		break;
	case PFMFS_HELPER_IOC_HOLD:
		what = "HOLD";
		break;
	default:
		what = "RELEASE";
		break;
	}
	if (copy_from_user(&a, uarg, sizeof(a)))
		return pfh_bad(-EFAULT, "%s: bad address", what);
	if (a.reserved || a.target > PFMFS_HELPER_TARGET_CPU)
		return pfh_bad(-EINVAL, "%s: target %u reserved %u",
			       what, a.target, a.reserved);
	if (a.flags && (cmd != PFMFS_HELPER_IOC_ATTACH ||
			a.target != PFMFS_HELPER_TARGET_THREAD ||
			(a.flags & ~PFMFS_HELPER_ATTACH_INHERIT)))
		return pfh_bad(-EINVAL, "%s: %s %u: flags 0x%x", what,
			       a.target ? "cpu" : "thread", a.id, a.flags);
	if (a.target == PFMFS_HELPER_TARGET_CPU &&
	    (cmd == PFMFS_HELPER_IOC_HOLD || cmd == PFMFS_HELPER_IOC_RELEASE))
		return pfh_bad(-EINVAL, "%s: threads only", what);

	mutex_lock(&pfh_mutex);
	if (cmd == PFMFS_HELPER_IOC_ATTACH) {
		ret = pfh_attach(f, a.target, a.id, a.flags);
		goto out;
	}
	t = pfh_file_target(f, a.target, a.id);
	if (!t) {
		ret = pfh_bad(-EINVAL, "%s: %s %u is not attached by this opener",
			      what, a.target ? "cpu" : "thread", a.id);
		goto out;
	}
	switch (cmd) {
	case PFMFS_HELPER_IOC_DETACH:
		pfh_detach(t);
		break;
	case PFMFS_HELPER_IOC_HOLD:
		ret = pfh_hold(t);
		break;
	default:
		pfh_release(t);
		break;
	}
out:
	mutex_unlock(&pfh_mutex);
	return ret;
}

static long pfh_ioc_template(struct pfh_file *f, void __user *uarg)
{
	struct pfmfs_helper_msr *ops = NULL;
	struct pfmfs_helper_template tpl;
	struct pfh_target *t;
	unsigned int n;
	long ret;
	u32 i;

	if (copy_from_user(&tpl, uarg, sizeof(tpl)))
		return pfh_bad(-EFAULT, "TEMPLATE: bad address");
	if (tpl.reserved || tpl.count > PFMFS_HELPER_MAX_BATCH)
		return pfh_bad(-EINVAL, "TEMPLATE: count %u reserved %llu",
			       tpl.count, tpl.reserved);
	if (tpl.count) {
		ops = kmalloc_array(tpl.count, sizeof(*ops), GFP_KERNEL);
		if (!ops)
			return -ENOMEM;
		if (copy_from_user(ops, u64_to_user_ptr(tpl.ops),
				   tpl.count * sizeof(*ops))) {
			ret = pfh_bad(-EFAULT, "TEMPLATE: bad ops address");
			goto out;
		}
	}
	for (i = 0; i < tpl.count; i++) {
		if (ops[i].reserved) {
			ret = pfh_bad(-EINVAL, "TEMPLATE: op %u: reserved %u", i,
				      ops[i].reserved);
			goto out;
		}
		if (pfh_msr_classify(ops[i].msr, &n) == PFH_K_NONE) {
			atomic64_inc(&pfh_stats.refused);
			ret = pfh_bad(-EPERM, "TEMPLATE: MSR 0x%x is not on the allowlist",
				      ops[i].msr);
			goto out;
		}
	}
	mutex_lock(&pfh_mutex);
	t = pfh_file_target(f, PFMFS_HELPER_TARGET_THREAD, tpl.tid);
	if (!t)
		ret = pfh_bad(-EINVAL, "TEMPLATE: thread %u is not attached by this opener",
			      tpl.tid);
	else
		ret = pfh_set_template(t, ops, tpl.count, tpl.tag);
	mutex_unlock(&pfh_mutex);
	if (ret == -ENOENT)
		ret = pfh_bad(-EINVAL, "TEMPLATE: thread %u does not follow its children",
			      tpl.tid);
	else if (ret)
		pfh_bad(ret, "TEMPLATE: thread %u: a register it may not name, or a value it cannot take",
			tpl.tid);
out:
	kfree(ops);
	return ret;
}

static long pfh_ioc_stats(void __user *uarg)
{
	struct pfmfs_helper_stats s = {
		.switch_ins = atomic64_read(&pfh_stats.switch_ins),
		.switch_outs = atomic64_read(&pfh_stats.switch_outs),
		.ctrl_writes = atomic64_read(&pfh_stats.ctrl_writes),
		.global_writes = atomic64_read(&pfh_stats.global_writes),
		.counter_writes = atomic64_read(&pfh_stats.counter_writes),
		.pmis = atomic64_read(&pfh_stats.pmis),
		.records = atomic64_read(&pfh_stats.records),
		.lost = atomic64_read(&pfh_stats.lost),
		.refused = atomic64_read(&pfh_stats.refused),
		.held = atomic64_read(&pfh_stats.held),
		.attached = atomic64_read(&pfh_stats.attached),
	};

	if (copy_to_user(uarg, &s, sizeof(s)))
		return pfh_bad(-EFAULT, "STATS: bad address");
	return 0;
}

static long pfh_ioc_cpu_state(void __user *uarg)
{
	struct pfmfs_helper_cpu_state st;
	long ret;

	if (copy_from_user(&st, uarg, sizeof(st)))
		return pfh_bad(-EFAULT, "CPU_STATE: bad address");
	if (st.reserved)
		return pfh_bad(-EINVAL, "CPU_STATE: reserved %llu", st.reserved);
	if (!pfh_cpu_ok(st.cpu))
		return pfh_bad(-EINVAL, "CPU_STATE: no online cpu %u", st.cpu);
	mutex_lock(&pfh_mutex);
	ret = pfh_cpu_state(&st);
	mutex_unlock(&pfh_mutex);
	if (ret)
		return ret;
	if (copy_to_user(uarg, &st, sizeof(st)))
		return pfh_bad(-EFAULT, "CPU_STATE: bad address");
	return 0;
}

static long pfh_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct pfh_file *f = file->private_data;
	void __user *uarg = (void __user *)arg;

	/* HELLO of any size: a caller of another ABI learns the module's. */
	if (_IOC_TYPE(cmd) == PFMFS_HELPER_IOC_MAGIC &&
	    _IOC_NR(cmd) == _IOC_NR(PFMFS_HELPER_IOC_HELLO) &&
	    _IOC_DIR(cmd) == (_IOC_READ | _IOC_WRITE))
		return pfh_ioc_hello(f, uarg, _IOC_SIZE(cmd));

	switch (cmd) {
	case PFMFS_HELPER_IOC_MSR_READ:
	case PFMFS_HELPER_IOC_MSR_WRITE:
	case PFMFS_HELPER_IOC_ATTACH:
	case PFMFS_HELPER_IOC_DETACH:
	case PFMFS_HELPER_IOC_HOLD:
	case PFMFS_HELPER_IOC_RELEASE:
	case PFMFS_HELPER_IOC_STATS:
	case PFMFS_HELPER_IOC_CPU_STATE:
	case PFMFS_HELPER_IOC_TEMPLATE:
		break;
	default:
		return pfh_bad(-ENOTTY, "unknown ioctl 0x%x", cmd);
	}
	if (!READ_ONCE(f->hello))
		return pfh_bad(-EINVAL, "ioctl 0x%x before HELLO", cmd);

	switch (cmd) {
	case PFMFS_HELPER_IOC_MSR_READ:
		return pfh_ioc_batch(f, uarg, false);
	case PFMFS_HELPER_IOC_MSR_WRITE:
		return pfh_ioc_batch(f, uarg, true);
	case PFMFS_HELPER_IOC_STATS:
		return pfh_ioc_stats(uarg);
	case PFMFS_HELPER_IOC_CPU_STATE:
		return pfh_ioc_cpu_state(uarg);
	case PFMFS_HELPER_IOC_TEMPLATE:
		return pfh_ioc_template(f, uarg);
	default:
		return pfh_ioc_target(f, cmd, uarg);
	}
}

static ssize_t pfh_read(struct file *file, char __user *buf, size_t len,
			loff_t *ppos)
{
	struct pfh_file *f = file->private_data;

	if (!READ_ONCE(f->hello))
		return pfh_bad(-EINVAL, "read before HELLO");
	if (len < sizeof(struct pfmfs_helper_record))
		return pfh_bad(-EINVAL, "read of %zu bytes: a record is %zu",
			       len, sizeof(struct pfmfs_helper_record));
	return pfh_ring_read(f, buf, len, file->f_flags & O_NONBLOCK);
}

static __poll_t pfh_poll(struct file *file, struct poll_table_struct *wait)
{
	struct pfh_file *f = file->private_data;

	if (!READ_ONCE(f->hello))
		return EPOLLERR;
	poll_wait(file, &f->wq, wait);
	return pfh_ring_readable(f) ? EPOLLIN | EPOLLRDNORM : 0;
}

static const struct file_operations pfh_fops = {
	.owner = THIS_MODULE,
	.open = pfh_open,
	.release = pfh_close,
	.unlocked_ioctl = pfh_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.read = pfh_read,
	.poll = pfh_poll,
	.llseek = no_llseek,
};

static struct miscdevice pfh_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = KBUILD_MODNAME,		/* /dev/pfmfs_helper */
	.fops = &pfh_fops,
	.mode = 0600,
};

int pfh_dev_init(void)
{
	int ret = misc_register(&pfh_misc);

	if (ret)
		pr_err("cannot register /dev/%s: %d\n", pfh_misc.name, ret);
	return ret;
}

void pfh_dev_exit(void)
{
	misc_deregister(&pfh_misc);
}
