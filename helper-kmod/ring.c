// SPDX-License-Identifier: GPL-2.0
/*
 * Each opener's ring of records, and read()/poll() of the device.
 *
 * Producers run anywhere: NMI handlers, sched_switch with the runqueue lock
 * held, exit and fork. A bounded queue of slots, each with a sequence
 * number (Vyukov's): a producer reserves a position with cmpxchg, fills the
 * slot and publishes it by its sequence number; an NMI that interrupts a
 * producer on the same cpu takes the next position and never waits. One
 * consumer at a time (read_mutex) takes the published slots in order. A
 * full ring drops the record and counts it; readers are woken by irq_work.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/irq_work.h>
#include <linux/mm.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>

#include "pfh.h"

/* Records copied to user space per round. */
#define PFH_READ_CHUNK	8

int pfh_ring_init(struct pfh_ring *r, unsigned int records)
{
	unsigned long i;

	r->slots = kvcalloc(records, sizeof(*r->slots), GFP_KERNEL);
	if (!r->slots)
		return -ENOMEM;
	for (i = 0; i < records; i++)
		r->slots[i].seq = i;
	r->mask = records - 1;
	r->head = 0;
	r->tail = 0;
	atomic64_set(&r->lost, 0);
	return 0;
}

void pfh_ring_free(struct pfh_ring *r)
{
	kvfree(r->slots);
	r->slots = NULL;
}

/* A producer; any context. False when the ring is full. */
static bool pfh_ring_push(struct pfh_ring *r, const struct pfmfs_helper_record *rec)
{
	unsigned long pos = READ_ONCE(r->head), seq;
	struct pfh_ring_slot *slot;
	long diff;

	for (;;) {
		slot = &r->slots[pos & r->mask];
		/* Pairs with the consumer's release: the slot is free. */
		seq = smp_load_acquire(&slot->seq);
		diff = (long)(seq - pos);
		if (diff < 0)
			return false;	/* it still holds a record a lap behind */
		if (diff > 0)
			pos = READ_ONCE(r->head);	/* another producer took it */
		else if (try_cmpxchg(&r->head, &pos, pos + 1))
			break;
	}
	slot->rec = *rec;
	/* Publishes the record: pairs with the consumer's acquire. */
	smp_store_release(&slot->seq, pos + 1);
	return true;
}

/* The consumer: up to `max` records into `out`, not yet taken. */
static unsigned int pfh_ring_peek(struct pfh_ring *r,
				  struct pfmfs_helper_record *out,
				  unsigned int max)
{
	unsigned int n;

	for (n = 0; n < max; n++) {
		struct pfh_ring_slot *slot = &r->slots[(r->tail + n) & r->mask];

		/* Pairs with the producer's release: the record is whole. */
		if (smp_load_acquire(&slot->seq) != r->tail + n + 1)
			break;
		out[n] = slot->rec;
	}
	return n;
}

/* The consumer: gives the first `n` peeked slots back to the producers. */
static void pfh_ring_take(struct pfh_ring *r, unsigned int n)
{
	while (n--) {
		struct pfh_ring_slot *slot = &r->slots[r->tail & r->mask];

		/* The record is read: the slot is free for the next lap. */
		smp_store_release(&slot->seq, r->tail + r->mask + 1);
		r->tail++;
	}
}

bool pfh_ring_readable(struct pfh_file *f)
{
	struct pfh_ring *r = &f->ring;

	unsigned long tail = READ_ONCE(r->tail);

	if (atomic64_read(&r->lost))
		return true;
	/* Pairs with the producer's release. */
	return smp_load_acquire(&r->slots[tail & r->mask].seq) == tail + 1;
}

/* Queues a record for an opener, from any context: false if it was dropped. */
bool pfh_queue_record(struct pfh_file *f, struct pfmfs_helper_record *rec)
{
	bool queued = pfh_ring_push(&f->ring, rec);

	if (queued) {
		atomic64_inc(&pfh_stats.records);
	} else {
		atomic64_inc(&f->ring.lost);
		atomic64_inc(&pfh_stats.lost);
	}
	irq_work_queue(&f->wake);
	return queued;
}

void pfh_ring_wake(struct irq_work *work)
{
	struct pfh_file *f = container_of(work, struct pfh_file, wake);

	wake_up_interruptible_poll(&f->wq, EPOLLIN | EPOLLRDNORM);
}

/* read(): whole records, a LOST record first when some were dropped. */
ssize_t pfh_ring_read(struct pfh_file *f, char __user *buf, size_t len,
		      bool nonblock)
{
	struct pfmfs_helper_record recs[PFH_READ_CHUNK];
	const size_t size = sizeof(recs[0]);
	size_t max = len / size, done = 0;
	unsigned int n;
	ssize_t ret;
	s64 lost;

	if (!max)
		return -EINVAL;
	if (mutex_lock_interruptible(&f->read_mutex))
		return -ERESTARTSYS;
	while (!pfh_ring_readable(f)) {
		mutex_unlock(&f->read_mutex);
		if (nonblock)
			return -EAGAIN;
		if (wait_event_interruptible(f->wq, pfh_ring_readable(f)))
			return -ERESTARTSYS;
		if (mutex_lock_interruptible(&f->read_mutex))
			return -ERESTARTSYS;
	}

	lost = atomic64_xchg(&f->ring.lost, 0);
	if (lost) {
		memset(&recs[0], 0, size);
		recs[0].type = PFMFS_HELPER_REC_LOST;
		recs[0].cpu = raw_smp_processor_id();
		recs[0].value = lost;
		recs[0].time_ns = ktime_get_mono_fast_ns();
		if (copy_to_user(buf, &recs[0], size)) {
			atomic64_add(lost, &f->ring.lost);
			ret = -EFAULT;
			goto out;
		}
		done = 1;
	}
	while (done < max) {
		n = pfh_ring_peek(&f->ring, recs,
				  min_t(size_t, max - done, PFH_READ_CHUNK));
		if (!n)
			break;
		if (copy_to_user(buf + done * size, recs, n * size)) {
			if (!done) {
				ret = -EFAULT;
				goto out;
			}
			break;
		}
		pfh_ring_take(&f->ring, n);
		done += n;
	}
	ret = done * size;
out:
	mutex_unlock(&f->read_mutex);
	return ret;
}
