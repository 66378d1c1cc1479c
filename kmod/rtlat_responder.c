// SPDX-License-Identifier: GPL-2.0
/*
 * rtlat-responder: answer a GPIO edge from kernel context.
 *
 * The board under test mirrors a trigger input on a reply output, as
 * `rtlat irq target` does from user space, but from the interrupt handler
 * (mode irq), its threaded handler (mode thread) or a dedicated SCHED_FIFO
 * kernel thread woken by the handler (mode kthread). Per edge it records the
 * handler's entry, the start of the reply context and the moment the output
 * was set (CLOCK_MONOTONIC ns); rtlat reads the records from
 * /dev/rtlat-responder and configures everything through ioctls (see
 * rtlat_responder.h), so no module parameter is needed for a run.
 *
 * It also offers a known cause of latency on demand: a section of the
 * calling CPU with preemption (or interrupts) off, for rtlat's `kspin` load.
 *
 * The lines are found through a GPIO lookup table for our platform device,
 * keyed by chip label and offset or by line name (6.1 has no
 * gpio_device_find_by_label).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/gpio/consumer.h>
#include <linux/gpio/machine.h>
#include <linux/interrupt.h>
#include <linux/kthread.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/sched/types.h>
#include <uapi/linux/sched/types.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "rtlat_responder.h"

#define DEV_NAME "rtlat-responder"
#define RING 4096 /* records; a power of two */

struct responder {
	struct mutex cfg_lock; /* START/STOP/release */
	struct platform_device *pdev;
	struct gpiod_lookup_table *lookup;
	char in_key[RTLAT_RESP_NAME_LEN];
	char out_key[RTLAT_RESP_NAME_LEN];
	struct gpio_desc *in, *out;
	int irq;
	u32 mode;
	struct task_struct *task;
	wait_queue_head_t readers; /* poll(): a record is ready */

	raw_spinlock_t lock; /* everything below */
	bool pending;
	u64 pend_seq, pend_ns;
	u64 seen, answered, coalesced, dropped;
	struct rtlat_resp_record *ring;
	u32 head, tail;
	char reason[RTLAT_RESP_REASON_LEN];
};

static struct responder resp;
static atomic_t opened = ATOMIC_INIT(0);

/* Handler entry: one more edge; an unanswered previous one is coalesced. */
static void note_edge(struct responder *r)
{
	u64 now = ktime_get_ns();
	unsigned long fl;

	raw_spin_lock_irqsave(&r->lock, fl);
	r->seen++;
	if (r->pending)
		r->coalesced++;
	r->pending = true;
	r->pend_seq = r->seen;
	r->pend_ns = now;
	raw_spin_unlock_irqrestore(&r->lock, fl);
}

/* Mirror the trigger's level on the output and record the edge. */
static void reply(struct responder *r, bool can_sleep)
{
	struct rtlat_resp_record rec = {};
	unsigned long fl;
	int level;

	raw_spin_lock_irqsave(&r->lock, fl);
	if (!r->pending) {
		raw_spin_unlock_irqrestore(&r->lock, fl);
		return;
	}
	r->pending = false;
	rec.seq = r->pend_seq;
	rec.edge_ns = r->pend_ns;
	raw_spin_unlock_irqrestore(&r->lock, fl);

	rec.start_ns = ktime_get_ns();
	if (can_sleep) {
		level = gpiod_get_value_cansleep(r->in);
		if (level >= 0)
			gpiod_set_value_cansleep(r->out, level);
	} else {
		level = gpiod_get_value(r->in);
		if (level >= 0)
			gpiod_set_value(r->out, level);
	}
	rec.reply_ns = ktime_get_ns();
	rec.level = level > 0;

	raw_spin_lock_irqsave(&r->lock, fl);
	r->answered++;
	if (r->head - r->tail < RING)
		r->ring[r->head++ & (RING - 1)] = rec;
	else
		r->dropped++;
	raw_spin_unlock_irqrestore(&r->lock, fl);
	/* After the reply: the reader's wake-up cannot delay it. */
	wake_up_interruptible(&r->readers);
}

static irqreturn_t edge_wake_thread(int irq, void *data)
{
	note_edge(data);
	return IRQ_WAKE_THREAD;
}

static irqreturn_t edge_thread(int irq, void *data)
{
	reply(data, true);
	return IRQ_HANDLED;
}

static irqreturn_t edge_wake_kthread(int irq, void *data)
{
	struct responder *r = data;

	note_edge(r);
	wake_up_process(r->task);
	return IRQ_HANDLED;
}

static irqreturn_t edge_reply_hard(int irq, void *data)
{
	note_edge(data);
	reply(data, false);
	return IRQ_HANDLED;
}

static int kthread_fn(void *data)
{
	struct responder *r = data;

	while (!kthread_should_stop()) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (!READ_ONCE(r->pending) && !kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
		reply(r, true);
	}
	return 0;
}

static void refuse(struct responder *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
	va_end(ap);
	pr_warn("%s\n", r->reason);
}

static void fill_line(struct gpiod_lookup *e, char *key, const struct rtlat_resp_line *l,
		      const char *con_id)
{
	if (l->chip[0]) {
		strscpy(key, l->chip, RTLAT_RESP_NAME_LEN);
		e->chip_hwnum = l->offset;
	} else {
		strscpy(key, l->name, RTLAT_RESP_NAME_LEN);
		e->chip_hwnum = U16_MAX; /* key is a line name */
	}
	e->key = key;
	e->con_id = con_id;
	e->idx = 0;
	e->flags = GPIO_ACTIVE_HIGH;
}

static const char *line_str(const struct rtlat_resp_line *l, char *buf, size_t n)
{
	if (l->chip[0])
		snprintf(buf, n, "%s offset %u", l->chip, l->offset);
	else
		snprintf(buf, n, "line named %s", l->name);
	return buf;
}

static struct gpio_desc *get_line(struct responder *r, const struct rtlat_resp_line *l,
				  const char *con_id, enum gpiod_flags flags)
{
	struct gpio_desc *d = gpiod_get(&r->pdev->dev, con_id, flags);
	char what[RTLAT_RESP_NAME_LEN + 24];

	if (IS_ERR(d)) {
		long e = PTR_ERR(d);

		line_str(l, what, sizeof(what));
		if (e == -EPROBE_DEFER || e == -ENOENT) {
			refuse(r, "no GPIO %s (%s)", what, con_id);
			return ERR_PTR(-ENODEV);
		}
		refuse(r, "cannot take GPIO %s (%s): error %ld", what, con_id, e);
	}
	return d;
}

static void stop_locked(struct responder *r)
{
	if (r->irq > 0)
		free_irq(r->irq, r);
	r->irq = 0;
	if (r->task)
		kthread_stop(r->task);
	r->task = NULL;
	if (r->out)
		gpiod_put(r->out);
	if (r->in)
		gpiod_put(r->in);
	r->in = r->out = NULL;
	if (r->lookup) {
		gpiod_remove_lookup_table(r->lookup);
		kfree(r->lookup);
	}
	r->lookup = NULL;
	r->mode = 0;
}

static int start_locked(struct responder *r, const struct rtlat_resp_config *c)
{
	unsigned long trig = IRQF_TRIGGER_RISING | IRQF_TRIGGER_FALLING;
	int ret, level;

	if (r->mode)
		stop_locked(r);
	r->reason[0] = 0;
	if (c->mode < RTLAT_RESP_MODE_THREAD || c->mode > RTLAT_RESP_MODE_IRQ) {
		refuse(r, "unknown reply mode %u", c->mode);
		return -EINVAL;
	}
	if (c->mode == RTLAT_RESP_MODE_KTHREAD && (c->priority < 1 || c->priority > 99)) {
		refuse(r, "kthread priority %u is not in 1..99", c->priority);
		return -EINVAL;
	}
	if ((!c->in.chip[0] && !c->in.name[0]) || (!c->out.chip[0] && !c->out.name[0])) {
		refuse(r, "both lines need a chip label or a line name");
		return -EINVAL;
	}

	r->lookup = kzalloc(struct_size(r->lookup, table, 3), GFP_KERNEL);
	if (!r->lookup)
		return -ENOMEM;
	r->lookup->dev_id = dev_name(&r->pdev->dev);
	fill_line(&r->lookup->table[0], r->in_key, &c->in, "in");
	fill_line(&r->lookup->table[1], r->out_key, &c->out, "out");
	gpiod_add_lookup_table(r->lookup);

	r->in = get_line(r, &c->in, "in", GPIOD_IN);
	if (IS_ERR(r->in)) {
		ret = PTR_ERR(r->in);
		r->in = NULL;
		goto fail;
	}
	level = gpiod_get_value_cansleep(r->in);
	r->out = get_line(r, &c->out, "out", level > 0 ? GPIOD_OUT_HIGH : GPIOD_OUT_LOW);
	if (IS_ERR(r->out)) {
		ret = PTR_ERR(r->out);
		r->out = NULL;
		goto fail;
	}

	if (c->mode == RTLAT_RESP_MODE_IRQ) {
		if (gpiod_cansleep(r->out) || gpiod_cansleep(r->in)) {
			refuse(r, "reply-from irq refused: the GPIO chip of the %s line can sleep (its set/get takes a lock); use thread or kthread",
			       gpiod_cansleep(r->out) ? "output" : "input");
			ret = -EOPNOTSUPP;
			goto fail;
		}
		if (IS_ENABLED(CONFIG_PREEMPT_RT) && !(c->flags & RTLAT_RESP_F_NO_THREAD)) {
			refuse(r, "reply-from irq refused: this PREEMPT_RT kernel runs interrupt handlers in threads; use thread or kthread");
			ret = -EOPNOTSUPP;
			goto fail;
		}
	}

	ret = gpiod_to_irq(r->in);
	if (ret <= 0) {
		refuse(r, "the input line has no interrupt (gpiod_to_irq: %d)", ret);
		ret = ret < 0 ? ret : -ENXIO;
		goto fail;
	}
	r->irq = ret;

	raw_spin_lock_irq(&r->lock);
	r->pending = false;
	r->seen = r->answered = r->coalesced = r->dropped = 0;
	r->head = r->tail = 0;
	raw_spin_unlock_irq(&r->lock);

	switch (c->mode) {
	case RTLAT_RESP_MODE_THREAD:
		ret = request_threaded_irq(r->irq, edge_wake_thread, edge_thread,
					   trig | IRQF_ONESHOT, DEV_NAME, r);
		break;
	case RTLAT_RESP_MODE_KTHREAD: {
		struct sched_attr attr = {
			.size = sizeof(attr),
			.sched_policy = SCHED_FIFO,
			.sched_priority = c->priority,
		};

		r->task = kthread_create(kthread_fn, r, "rtlat-resp");
		if (IS_ERR(r->task)) {
			ret = PTR_ERR(r->task);
			r->task = NULL;
			refuse(r, "cannot create the reply thread: error %d", ret);
			goto fail_irq;
		}
		ret = sched_setattr_nocheck(r->task, &attr);
		if (ret) {
			refuse(r, "cannot make the reply thread SCHED_FIFO %u: error %d", c->priority, ret);
			goto fail_irq;
		}
		wake_up_process(r->task);
		ret = request_irq(r->irq, edge_wake_kthread, trig, DEV_NAME, r);
		break;
	}
	default:
		ret = request_irq(r->irq, edge_reply_hard,
				  trig | IRQF_NO_THREAD, DEV_NAME, r);
		break;
	}
	if (ret) {
		refuse(r, "cannot request IRQ %d: error %d", r->irq, ret);
		goto fail_irq;
	}
	r->mode = c->mode;
	pr_info("replying from %s: IRQ %d\n",
		c->mode == RTLAT_RESP_MODE_THREAD ? "thread" :
		c->mode == RTLAT_RESP_MODE_KTHREAD ? "kthread" : "irq", r->irq);
	return 0;

fail_irq:
	r->irq = 0;
fail:
	stop_locked(r);
	return ret;
}

/*
 * RTLAT_RESP_IOC_SPIN: busy-wait on this CPU for s->ns with preemption off
 * (interrupts off too with RTLAT_RESP_SPIN_IRQS_OFF). The fast monotonic
 * clock reads the clocksource directly, so it advances with interrupts off.
 */
static int spin(const struct rtlat_resp_spin *s)
{
	unsigned long flags = 0;
	bool irqs = s->flags & RTLAT_RESP_SPIN_IRQS_OFF;
	u64 t0;

	if (!s->ns || s->ns > RTLAT_RESP_SPIN_MAX_NS ||
	    (s->flags & ~RTLAT_RESP_SPIN_IRQS_OFF) || s->reserved)
		return -EINVAL;
	if (irqs)
		local_irq_save(flags);
	else
		preempt_disable();
	t0 = ktime_get_mono_fast_ns();
	while (ktime_get_mono_fast_ns() - t0 < s->ns)
		cpu_relax();
	if (irqs)
		local_irq_restore(flags);
	else
		preempt_enable();
	return 0;
}

static long resp_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct responder *r = &resp;
	void __user *up = (void __user *)arg;
	long ret = 0;

	switch (cmd) {
	case RTLAT_RESP_IOC_INFO: {
		struct rtlat_resp_info info = {};

		mutex_lock(&r->cfg_lock);
		raw_spin_lock_irq(&r->lock);
		info.seen = r->seen;
		info.answered = r->answered;
		info.coalesced = r->coalesced;
		info.dropped = r->dropped;
		raw_spin_unlock_irq(&r->lock);
		info.version = RTLAT_RESP_VERSION;
		info.preempt_rt = IS_ENABLED(CONFIG_PREEMPT_RT);
		info.running = r->mode != 0;
		info.mode = r->mode;
		strscpy(info.reason, r->reason, sizeof(info.reason));
		mutex_unlock(&r->cfg_lock);
		if (copy_to_user(up, &info, sizeof(info)))
			ret = -EFAULT;
		break;
	}
	case RTLAT_RESP_IOC_START: {
		struct rtlat_resp_config c;

		if (copy_from_user(&c, up, sizeof(c)))
			return -EFAULT;
		c.in.chip[RTLAT_RESP_NAME_LEN - 1] = 0;
		c.in.name[RTLAT_RESP_NAME_LEN - 1] = 0;
		c.out.chip[RTLAT_RESP_NAME_LEN - 1] = 0;
		c.out.name[RTLAT_RESP_NAME_LEN - 1] = 0;
		mutex_lock(&r->cfg_lock);
		ret = start_locked(r, &c);
		mutex_unlock(&r->cfg_lock);
		break;
	}
	case RTLAT_RESP_IOC_SPIN: {
		struct rtlat_resp_spin s;

		if (copy_from_user(&s, up, sizeof(s)))
			return -EFAULT;
		ret = spin(&s);
		break;
	}
	case RTLAT_RESP_IOC_STOP:
		mutex_lock(&r->cfg_lock);
		stop_locked(r);
		mutex_unlock(&r->cfg_lock);
		break;
	default:
		ret = -ENOTTY;
	}
	return ret;
}

static ssize_t resp_read(struct file *f, char __user *buf, size_t count, loff_t *pos)
{
	struct responder *r = &resp;
	struct rtlat_resp_record *tmp;
	size_t n = min_t(size_t, count / sizeof(*tmp), 256), i;

	if (!n)
		return -EINVAL;
	tmp = kmalloc_array(n, sizeof(*tmp), GFP_KERNEL);
	if (!tmp)
		return -ENOMEM;
	raw_spin_lock_irq(&r->lock);
	for (i = 0; i < n && r->tail != r->head; i++)
		tmp[i] = r->ring[r->tail++ & (RING - 1)];
	raw_spin_unlock_irq(&r->lock);
	if (i && copy_to_user(buf, tmp, i * sizeof(*tmp)))
		i = 0; /* the records are gone: report the fault */
	kfree(tmp);
	if (!i)
		return r->head == r->tail ? -EAGAIN : -EFAULT;
	return i * sizeof(*tmp);
}

static __poll_t resp_poll(struct file *f, poll_table *wait)
{
	struct responder *r = &resp;
	__poll_t mask = 0;

	poll_wait(f, &r->readers, wait);
	raw_spin_lock_irq(&r->lock);
	if (r->head != r->tail)
		mask = EPOLLIN | EPOLLRDNORM;
	raw_spin_unlock_irq(&r->lock);
	return mask;
}

static int resp_open(struct inode *ino, struct file *f)
{
	if (atomic_cmpxchg(&opened, 0, 1))
		return -EBUSY;
	return nonseekable_open(ino, f);
}

static int resp_release(struct inode *ino, struct file *f)
{
	mutex_lock(&resp.cfg_lock);
	stop_locked(&resp);
	mutex_unlock(&resp.cfg_lock);
	atomic_set(&opened, 0);
	return 0;
}

static const struct file_operations resp_fops = {
	.owner = THIS_MODULE,
	.open = resp_open,
	.release = resp_release,
	.read = resp_read,
	.poll = resp_poll,
	.unlocked_ioctl = resp_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = no_llseek,
};

static struct miscdevice resp_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = DEV_NAME,
	.fops = &resp_fops,
	.mode = 0600,
};

static int __init resp_init(void)
{
	int ret;

	mutex_init(&resp.cfg_lock);
	raw_spin_lock_init(&resp.lock);
	init_waitqueue_head(&resp.readers);
	resp.ring = vzalloc(array_size(RING, sizeof(*resp.ring)));
	if (!resp.ring)
		return -ENOMEM;
	resp.pdev = platform_device_register_simple(DEV_NAME, PLATFORM_DEVID_NONE, NULL, 0);
	if (IS_ERR(resp.pdev)) {
		ret = PTR_ERR(resp.pdev);
		goto free_ring;
	}
	ret = misc_register(&resp_misc);
	if (ret)
		goto unreg_pdev;
	pr_info("ready: /dev/%s (version %d%s)\n", DEV_NAME, RTLAT_RESP_VERSION,
		IS_ENABLED(CONFIG_PREEMPT_RT) ? ", PREEMPT_RT" : "");
	return 0;

unreg_pdev:
	platform_device_unregister(resp.pdev);
free_ring:
	vfree(resp.ring);
	return ret;
}

static void __exit resp_exit(void)
{
	misc_deregister(&resp_misc);
	mutex_lock(&resp.cfg_lock);
	stop_locked(&resp);
	mutex_unlock(&resp.cfg_lock);
	platform_device_unregister(resp.pdev);
	vfree(resp.ring);
}

module_init(resp_init);
module_exit(resp_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rtlat GPIO responder: answer an edge from IRQ, threaded handler or kernel thread");
MODULE_VERSION("1");
