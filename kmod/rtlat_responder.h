/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * rtlat-responder: the user-space interface of the kernel-side GPIO responder
 * (/dev/rtlat-responder). rtlat mirrors these structures in
 * src/sys/responder.rs; keep both in step and bump RTLAT_RESP_VERSION.
 */
#ifndef RTLAT_RESPONDER_H
#define RTLAT_RESPONDER_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define RTLAT_RESP_VERSION 2
#define RTLAT_RESP_NAME_LEN 64
#define RTLAT_RESP_REASON_LEN 128

/* Where the reply is issued from. */
#define RTLAT_RESP_MODE_THREAD 1	/* threaded handler (IRQF_ONESHOT) */
#define RTLAT_RESP_MODE_KTHREAD 2	/* own kernel thread, SCHED_FIFO, woken by the handler */
#define RTLAT_RESP_MODE_IRQ 3		/* the hard interrupt handler itself */

/* Mode irq on PREEMPT_RT: request the handler with IRQF_NO_THREAD. */
#define RTLAT_RESP_F_NO_THREAD 0x1

/*
 * A line: by chip label (gpio_chip.label) and offset, or, with an empty
 * chip, by line name.
 */
struct rtlat_resp_line {
	char chip[RTLAT_RESP_NAME_LEN];
	char name[RTLAT_RESP_NAME_LEN];
	__u32 offset;
};

struct rtlat_resp_config {
	struct rtlat_resp_line in;	/* the trigger: both edges are answered */
	struct rtlat_resp_line out;	/* the reply: mirrors the trigger's level */
	__u32 mode;			/* RTLAT_RESP_MODE_* */
	__u32 priority;			/* kthread: SCHED_FIFO 1..99 */
	__u32 flags;			/* RTLAT_RESP_F_* */
	__u32 reserved;
};

struct rtlat_resp_info {
	__u64 seen;		/* edges that entered the handler */
	__u64 answered;		/* replies issued */
	__u64 coalesced;	/* edges that arrived before the previous one was answered */
	__u64 dropped;		/* records lost because read() fell behind */
	__u32 version;		/* RTLAT_RESP_VERSION */
	__u32 preempt_rt;	/* 1 on a PREEMPT_RT kernel */
	__u32 running;		/* 1 between START and STOP */
	__u32 mode;		/* the running mode, 0 when stopped */
	char reason[RTLAT_RESP_REASON_LEN]; /* why the last START failed, "" if it did not */
};

/*
 * One answered edge, read() in whole records (-EAGAIN when none is ready;
 * poll() reports POLLIN once one is).
 */
struct rtlat_resp_record {
	__u64 seq;		/* 1, 2, ... per edge that entered the handler */
	__u64 edge_ns;		/* CLOCK_MONOTONIC at handler entry */
	__u64 start_ns;		/* the reply context began (thread, kthread; = edge in irq) */
	__u64 reply_ns;		/* the output set call returned */
	__u32 level;		/* the level driven */
	__u32 reserved;
};

/*
 * A known cause of latency: the calling CPU spins for ns with preemption
 * off (and interrupts too with RTLAT_RESP_SPIN_IRQS_OFF), as a driver
 * holding a spinlock does. rtlat's `kspin` load issues it, to check what
 * `--explain` says about such a section on a board.
 */
#define RTLAT_RESP_SPIN_IRQS_OFF 0x1
#define RTLAT_RESP_SPIN_MAX_NS 20000000	/* 20 ms */

struct rtlat_resp_spin {
	__u64 ns;		/* 1 .. RTLAT_RESP_SPIN_MAX_NS */
	__u32 flags;		/* RTLAT_RESP_SPIN_* */
	__u32 reserved;		/* 0 */
};

#define RTLAT_RESP_IOC_MAGIC 0xB7
#define RTLAT_RESP_IOC_INFO _IOR(RTLAT_RESP_IOC_MAGIC, 0, struct rtlat_resp_info)
#define RTLAT_RESP_IOC_START _IOW(RTLAT_RESP_IOC_MAGIC, 1, struct rtlat_resp_config)
#define RTLAT_RESP_IOC_STOP _IO(RTLAT_RESP_IOC_MAGIC, 2)
#define RTLAT_RESP_IOC_SPIN _IOW(RTLAT_RESP_IOC_MAGIC, 3, struct rtlat_resp_spin)

#endif
