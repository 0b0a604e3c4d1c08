#!/usr/bin/python3
"""Draws the pictures of docs/pictures from what real trainrun jobs wrote.

scripts/make_pictures.sh runs the jobs and calls this once per picture;
nothing here invents a host, a rank, a pid or a time: each comes from a
job's --report JSON, its --timeline, its --verbose lines or the lines its
ranks printed.

  draw_pictures.py process-model --report R --verbose V --ranks L OUT.svg
  draw_pictures.py timeline --timeline T --command C OUT.svg
  draw_pictures.py two-level --report R --verbose V --command C OUT.svg
  draw_pictures.py report --report R OUT.svg

Needs Debian's python3-matplotlib (scripts/setup.sh), for /usr/bin/python3.
"""
import argparse
import json
import re
import sys

import matplotlib

matplotlib.use('svg')
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.transforms as transforms  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

# Text stays text (small files, the reader's fonts); ids do not change
# between runs of the same picture, and no date is written.
matplotlib.rcParams.update({'svg.fonttype': 'none', 'svg.hashsalt': 'trainrun-docs',
                            'font.family': 'DejaVu Sans', 'font.size': 9})
SVG_META = {'Date': None, 'Creator': 'scripts/draw_pictures.py'}

HOST_COLOURS = ['#dbe9f6', '#fde4cf', '#d9f0d3', '#eadcf2']
SHM, TCP = '#2c7fb8', '#d95f0e'  # shared memory, TCP


def load_report(path):
    with open(path) as f:
        return json.load(f)


def hosts_of(report):
    """[(host name, [rank entries in rank order])] in the report's host order."""
    ranks = sorted(report['ranks'], key=lambda r: r['rank'])
    return [(h['name'], [r for r in ranks if r['host'] == h['name']]) for h in report['hosts']]


def cross_rank(hosts, host_index, local_rank):
    """Horovod's cross rank: this host's index among the hosts with a slot at local_rank."""
    having = [i for i, (_, ranks) in enumerate(hosts) if any(r['local_rank'] == local_rank for r in ranks)]
    return having.index(host_index), len(having)


def verbose_job_line(path):
    """(job id, rendezvous address) from the --verbose line 'trainrun: job ID: ... rendezvous A:P, ...'."""
    with open(path) as f:
        for line in f:
            m = re.search(r'trainrun: job (\w+): .* rendezvous ([^,]+), MASTER_ADDR ([^,]+),', line)
            if m:
                return m.group(1), m.group(2), m.group(3)
    sys.exit(f'{path}: no "trainrun: job ...: rendezvous ..." line (was the job run with --verbose?)')


def verbose_collectives_line(path):
    with open(path) as f:
        for line in f:
            if 'collectives (tcp):' in line:
                return line.split('collectives (tcp):', 1)[1].strip()
    sys.exit(f'{path}: no "collectives (tcp):" line (was the job run with --verbose on 2 hosts?)')


# --- 1. the process model -----------------------------------------------------

def rank_pids(path):
    """(launcher pid, {rank: agent pid}) from the ranks' lines 'pids: rank=P agent=A launcher=L'."""
    agents, launcher = {}, None
    with open(path) as f:
        for line in f:
            m = re.search(r'\[(\d+)\] pids: rank=(\d+) agent=(\d+) launcher=(\d+)', line)
            if m:
                agents[int(m.group(1))] = int(m.group(3))
                launcher = int(m.group(4))
    return launcher, agents


def box(ax, x, y, w, h, text, colour='white', size=8, edge='#333333', top=False):
    """A rounded box with its lower left corner at (x, y); text centred, or at the top."""
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle='round,pad=0,rounding_size=0.12',
                                facecolor=colour, edgecolor=edge, linewidth=1, zorder=1 if top else 3))
    if top:
        ax.text(x + 0.15, y + h - 0.12, text, ha='left', va='top', fontsize=size, color='#444444', zorder=4)
    else:
        ax.text(x + w / 2, y + h / 2, text, ha='center', va='center', fontsize=size, zorder=4)
    return (x, y, w, h)


def link(ax, a, b, colour='#444444', style='-', both=False, bend=0.0, label='', width=1.2, at=0.5):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle='<|-|>' if both else '-|>', mutation_scale=10, color=colour,
                                 linestyle=style, linewidth=width, connectionstyle=f'arc3,rad={bend}', zorder=2))
    if label:
        ax.text(a[0] + (b[0] - a[0]) * at, a[1] + (b[1] - a[1]) * at, label, ha='center', va='center',
                fontsize=7, color=colour, zorder=5, bbox=dict(facecolor='white', edgecolor='none', pad=1, alpha=0.9))


def process_model(args):
    report = load_report(args.report)
    job_id, rendezvous, master = verbose_job_line(args.verbose)
    launcher, agents = rank_pids(args.ranks)
    hosts = hosts_of(report)
    if launcher is None or len(agents) != report['size']:
        sys.exit(f'{args.ranks}: not every rank printed its agent and launcher')
    rank_w, gap = 2.3, 0.9
    host_w = [len(r) * rank_w + (len(r) + 1) * gap for _, r in hosts]
    width = sum(host_w) + 0.8 * (len(hosts) - 1)
    fig, ax = plt.subplots(figsize=(width * 0.78, 7.0))
    ax.set_xlim(-0.2, width + 0.2)
    ax.set_ylim(-1.9, 9.6)
    ax.axis('off')
    # The launcher: one process holding the supervisor and the rendezvous server.
    lx = width / 2 - 4.6
    box(ax, lx, 6.3, 9.2, 3.2, f'trainrun, the launcher: pid {launcher}, job {job_id}', '#f3f3f3', top=True)
    sup = box(ax, lx + 0.3, 6.6, 4.0, 2.2, 'supervisor\none thread: signals, exit codes,\n'
              'the --report, the summary line')
    rdv = box(ax, lx + 4.9, 6.6, 4.0, 2.2, f'rendezvous (HTTP/1.1)\n{rendezvous}\nevery request signed\n'
              'with the job secret (HMAC-SHA256)', '#fff6d5')
    x = 0.0
    row_pos = {}
    for i, (name, ranks) in enumerate(hosts):
        w = host_w[i]
        box(ax, x, 0.0, w, 4.9, f'host {name}', HOST_COLOURS[i % len(HOST_COLOURS)], top=True)
        agent = box(ax, x + w / 2 - 1.5, 2.9, 3.0, 1.3,
                    f'trainrun agent, pid {agents[ranks[0]["rank"]]}\nsubreaper of its ranks')
        link(ax, (sup[0] + sup[2] * (i + 1) / (len(hosts) + 1), sup[1]), (agent[0] + 1.5, agent[1] + agent[3]),
             label='job frames: pipes here;\nan SSH channel or an\nsrun step elsewhere', at=0.45)
        for j, r in enumerate(ranks):
            cr, cs = cross_rank(hosts, i, r['local_rank'])
            rx = x + gap + j * (rank_w + gap)
            rb = box(ax, rx, 0.5, rank_w, 1.5, f'rank {r["rank"]}\nlocal {r["local_rank"]}/{len(ranks)}, '
                     f'cross {cr}/{cs}\npid {r["pid"]}, {r["backend"]}')
            row_pos[r['rank']] = rb
            link(ax, (agent[0] + 1.5, agent[1]), (rx + rank_w / 2, 2.0), label='fork/exec', at=0.5)
        for a, b in zip(ranks, ranks[1:]):
            pa, pb = row_pos[a['rank']], row_pos[b['rank']]
            link(ax, (pa[0] + pa[2], 1.25), (pb[0], 1.25), SHM, both=True, width=2)
            ax.text((pa[0] + pa[2] + pb[0]) / 2, 1.45, 'shm', ha='center', fontsize=7, color=SHM)
        # The ranks reach the rendezvous: one dashed line per host stands for each of its ranks.
        start = (x + w * (0.1 if i < len(hosts) / 2 else 0.9), 4.9)
        end = (rdv[0] + rdv[2] * (0.2 + 0.6 * i / max(1, len(hosts) - 1)), rdv[1])
        link(ax, start, end, '#b08800', style='--', label='each rank:\nPUT / GET', at=0.75)
        x += w + 0.8
    for (_, a), (_, b) in zip(hosts, hosts[1:]):
        for j in range(min(len(a), len(b))):
            pa, pb = row_pos[a[j]['rank']], row_pos[b[j]['rank']]
            link(ax, (pa[0] + pa[2] / 2, 0.5), (pb[0] + pb[2] / 2, 0.5), TCP, both=True, bend=0.2 + 0.04 * j,
                 width=2)
    handles = [plt.Line2D([0], [0], color='#b08800', linestyle='--'), plt.Line2D([0], [0], color=SHM, linewidth=2),
               plt.Line2D([0], [0], color=TCP, linewidth=2)]
    ax.legend(handles, ['the ranks find each other through the rendezvous',
                        'ranks on one host: shared memory',
                        'ranks on different hosts: the TCP mesh (drawn: same local rank)'],
              loc='lower center', bbox_to_anchor=(0.5, -0.03), ncol=3, frameon=False, fontsize=7.5)
    ax.set_title(f'The processes of a real job: {" ".join(report["command_line"])}\n'
                 f'(hosts, ranks and pids from its --report; the rendezvous from --verbose; each rank printed '
                 f'its parent, the agent); MASTER_ADDR {master}', fontsize=8, loc='left')
    fig.savefig(args.out, bbox_inches='tight', metadata=SVG_META)


# --- 2. a timeline --------------------------------------------------------------

PHASES = [('NEGOTIATE_ALLREDUCE', 'negotiation: waiting until every rank submitted it', '#d9d9d9'),
          ('QUEUE', 'queued for the fusion buffer', '#fdd49e'),
          ('MEMCPY_IN_FUSION_BUFFER', 'copy into the fusion buffer', '#fc8d59'),
          ('TCP_ALLREDUCE', 'the allreduce (shared memory)', '#3182bd'),
          ('MEMCPY_OUT_FUSION_BUFFER', 'copy out of the fusion buffer', '#9e0142')]


def timeline_spans(events):
    """{(row, phase): [(begin_us, end_us)]} from the Chrome-trace B/E pairs, and each row's name."""
    names = {e['pid']: e['args']['name'] for e in events
             if e.get('ph') == 'M' and e.get('name') == 'process_name' and 'name' in e.get('args', {})}
    open_spans, spans, readies = {}, {}, []
    for e in sorted((e for e in events if e.get('ph') in 'BEi'), key=lambda e: e['ts']):
        key = (e['pid'], e['name'])
        if e['ph'] == 'B':
            open_spans[key] = e['ts']
        elif e['ph'] == 'E' and key in open_spans:
            spans.setdefault(key, []).append((open_spans.pop(key), e['ts']))
        elif e['ph'] == 'i' and e['name'].endswith(' ready'):
            readies.append((e['pid'], e['ts'], e['name']))
    return names, spans, readies


def timeline(args):
    with open(args.timeline) as f:
        events = json.load(f)
    names, spans, readies = timeline_spans(events)
    # The gradients of the training steps: rows that ran many allreduces.
    counts = {pid: len(spans.get((pid, 'ALLREDUCE'), [])) for pid in names}
    rows = [pid for pid in sorted(names) if counts.get(pid, 0) >= 10]
    if not rows:
        sys.exit(f'{args.timeline}: no tensor with 10 or more allreduces')
    # A window of args.steps steps from the middle of the run: from the
    # start of one step's first negotiation to the end of a later step's
    # last allreduce (every row runs once per step).
    starts = sorted(b for pid in rows for b, _ in spans.get((pid, 'NEGOTIATE_ALLREDUCE'), []))
    per_step = len(rows)
    middle = (len(starts) // per_step // 2) * per_step
    t0 = starts[middle]
    t1 = starts[middle + per_step * args.steps] if middle + per_step * args.steps < len(starts) else starts[-1]
    fig, ax = plt.subplots(figsize=(10, 0.42 * len(rows) + 1.9))
    labels = []
    for y, pid in enumerate(rows):
        labels.append(names[pid])
        for phase, _, colour in PHASES:
            bars = [((b - t0) / 1000, (e - b) / 1000) for b, e in spans.get((pid, phase), []) if b < t1 and e > t0]
            height = 0.8 if phase == 'NEGOTIATE_ALLREDUCE' else 0.5
            ax.broken_barh(bars, (y - height / 2, height), facecolors=colour, edgecolor='none')
        for rpid, ts, _ in readies:
            if rpid == pid and t0 <= ts <= t1:
                ax.plot([(ts - t0) / 1000] * 2, [y - 0.4, y + 0.4], color='#555555', linewidth=0.6)
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, (t1 - t0) / 1000)
    ax.set_xlabel('ms (rank 0\'s clock)')
    ax.grid(axis='x', color='#eeeeee')
    ax.set_axisbelow(True)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for _, _, c in PHASES]
    handles.append(plt.Line2D([0], [0], color='#555555', linewidth=0.8))
    ax.legend(handles, [text for _, text, _ in PHASES] + ['a rank submitted it ("rank N ready")'],
              loc='upper center', bbox_to_anchor=(0.5, -0.1), ncol=3, frameon=False, fontsize=8)
    ax.set_title(f'{args.steps} training steps of a real job, as its --timeline recorded them: each gradient\'s '
                 'allreduce is negotiated as soon as backward\nproduces it (the last layer first), and ready '
                 f'ones are fused into one call\n{args.command}',
                 fontsize=9, loc='left')
    for side in ('top', 'right'):
        ax.spines[side].set_visible(False)
    fig.savefig(args.out, bbox_inches='tight', metadata=SVG_META)


# --- 3. the two-level allreduce ---------------------------------------------------

def split_size(collectives):
    """The size from which each local rank carries 1/L across, as --verbose words it."""
    m = re.search(r'each local rank carrying 1/L across from (\d+ [KMG]?i?B)', collectives)
    return m.group(1) if m else None


def draw_stage(ax, hosts, caption, marks=None):
    """One stage: the hosts stacked top to bottom, each rank a circle; returns {rank: (x, y)}."""
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.12, 1)
    ax.axis('off')
    where = {}
    height = 0.92 / len(hosts)
    for i, (name, ranks) in enumerate(hosts):
        y0 = 1 - (i + 1) * height
        ax.add_patch(FancyBboxPatch((0.03, y0 + 0.03), 0.94, height - 0.08, boxstyle='round,pad=0.01',
                                    facecolor=HOST_COLOURS[i % len(HOST_COLOURS)], edgecolor='#888888'))
        ax.text(0.05, y0 + height - 0.07, f'host {name}', fontsize=7, va='top', color='#444444')
        for j, r in enumerate(ranks):
            x, y = 0.1 + 0.8 * (j + 0.5) / len(ranks), y0 + height * 0.42
            half = (0.1, 0.075 * 2 / len(hosts))
            where[r['rank']] = (x, y, half)
            ax.add_patch(FancyBboxPatch((x - half[0], y - half[1]), 2 * half[0], 2 * half[1],
                                        boxstyle='round,pad=0.005', facecolor='white', edgecolor='#333333',
                                        zorder=3))
            ax.text(x, y + 0.015, f'rank {r["rank"]}', ha='center', va='bottom', fontsize=7, zorder=4)
            ax.text(x, y - 0.01, (marks or {}).get(r['rank'], f'local {r["local_rank"]}'), ha='center', va='top',
                    fontsize=6, color='#555555', zorder=4)
    ax.text(0.5, -0.04, caption, ha='center', va='top', fontsize=7.5)
    return where


def arrow(ax, a, b, colour, both=False, bend=0.0):
    """An arrow between the edges of two rank boxes (x, y, (half width, half height))."""
    (ax_, ay, (hw, hh)), (bx, by, _) = a, b
    if abs(ay - by) < 1e-9:  # side by side in one host
        sign = 1 if bx > ax_ else -1
        start, end = (ax_ + sign * (hw + 0.01), ay), (bx - sign * (hw + 0.01), by)
    else:  # one above the other, across hosts
        sign = 1 if by > ay else -1
        start, end = (ax_, ay + sign * (hh + 0.01)), (bx, by - sign * (hh + 0.01))
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle='<|-|>' if both else '-|>', mutation_scale=10,
                                 color=colour, linewidth=1.8, connectionstyle=f'arc3,rad={bend}', zorder=2))


def two_level(args):
    report = load_report(args.report)
    hosts = hosts_of(report)
    collectives = verbose_collectives_line(args.verbose)
    split = split_size(collectives)
    if len(hosts) < 2 or 'two-level allreduce' not in collectives or not split:
        sys.exit(f'{args.verbose}: the job did not allreduce two-level: {collectives}')
    local = min(len(r) for _, r in hosts)
    fig, axes = plt.subplots(2, 3, figsize=(10, 7.4), gridspec_kw={'hspace': 0.45, 'wspace': 0.08})
    leaders = [ranks[0]['rank'] for _, ranks in hosts]
    # Below the split: local rank 0 carries its host's sum.
    w = draw_stage(axes[0][0], hosts, '1. each host reduces into local rank 0\n(shared memory)')
    for _, ranks in hosts:
        for r in ranks[1:]:
            arrow(axes[0][0], w[r['rank']], w[ranks[0]['rank']], SHM, bend=0.3)
    w = draw_stage(axes[0][1], hosts, '2. the local ranks 0 allreduce the host sums\nacross hosts (TCP): '
                   'the link carries\nthe message once per host', {r: 'host sum' for r in leaders})
    for a, b in zip(leaders, leaders[1:]):
        arrow(axes[0][1], w[a], w[b], TCP, both=True)
    w = draw_stage(axes[0][2], hosts, '3. local rank 0 hands the result to\nthe others (shared memory)',
                   {r: 'result' for r in leaders})
    for _, ranks in hosts:
        for r in ranks[1:]:
            arrow(axes[0][2], w[ranks[0]['rank']], w[r['rank']], SHM, bend=-0.3)
    # From the split: one block per local rank crosses.
    blocks = {r['rank']: f'block {r["local_rank"]}' for _, ranks in hosts for r in ranks}
    w = draw_stage(axes[1][0], hosts, '1. each host reduce-scatters (shared memory):\nlocal rank i holds '
                   'block i of its host\'s sum')
    for _, ranks in hosts:
        for a, b in zip(ranks, ranks[1:]):
            arrow(axes[1][0], w[a['rank']], w[b['rank']], SHM, both=True)
    w = draw_stage(axes[1][1], hosts, '2. the ranks at local rank i allreduce\nblock i across hosts (TCP), '
                   f'all {local}\nblocks at once', blocks)
    for j in range(local):
        column = [ranks[j]['rank'] for _, ranks in hosts]
        for a, b in zip(column, column[1:]):
            arrow(axes[1][1], w[a], w[b], TCP, both=True)
    w = draw_stage(axes[1][2], hosts, '3. each host allgathers the blocks\n(shared memory)', blocks)
    for _, ranks in hosts:
        for a, b in zip(ranks, ranks[1:]):
            arrow(axes[1][2], w[a['rank']], w[b['rank']], SHM, both=True)
    for row, text in ((0, f'below {split}: local rank 0 carries its host\'s sum across'),
                      (1, f'from {split}: each of the L local ranks carries 1/L of the sum across')):
        axes[row][0].text(0.0, 1.08, text, fontsize=9.5, fontweight='bold', transform=axes[row][0].transAxes)
    fig.suptitle(f'The two-level allreduce, on the hosts and ranks of a real job:\n{args.command}\n'
                 f'its --verbose line: {wrap(collectives.split(";")[0], 140)}', fontsize=7.5, x=0.125, y=1.04,
                 ha='left')
    handles = [plt.Line2D([0], [0], color=SHM, linewidth=2), plt.Line2D([0], [0], color=TCP, linewidth=2)]
    fig.legend(handles, ['within a host: shared memory', 'across hosts: TCP'], loc='lower center', ncol=2,
               frameon=False, fontsize=8, bbox_to_anchor=(0.5, -0.03))
    fig.savefig(args.out, bbox_inches='tight', metadata=SVG_META)


def wrap(text, width):
    words, lines, line = text.split(), [], ''
    for w in words:
        if len(line) + len(w) + 1 > width:
            lines.append(line)
            line = w
        else:
            line = f'{line} {w}' if line else w
    return '\n'.join(lines + [line])


# --- 4. a job report ---------------------------------------------------------------

def report_excerpt(rep, failed):
    """The report's top fields and the failing rank's entry, as JSON text."""
    top = {k: rep[k] for k in ('outcome', 'exit_code', 'size', 'wall_time_s', 'failure') if k in rep}
    text = json.dumps(top, indent=2)[:-2]
    entry = [r for r in rep['ranks'] if r['rank'] == failed]
    if entry:
        text += ',\n  "ranks": [ ...,\n    ' + json.dumps(entry[0]) + ',\n    ... ]'
    return wrap_lines(text + '\n}', 120)


def wrap_lines(text, width):
    """The lines of text, long ones folded at width."""
    lines = []
    for line in text.split('\n'):
        indent = len(line) - len(line.lstrip(' '))
        while len(line) > width:
            cut = line.rfind(' ', indent + 1, width)
            cut = cut if cut > indent else width
            lines.append(line[:cut])
            line = ' ' * (indent + 2) + line[cut:].lstrip(' ')
        lines.append(line)
    return lines


def report(args):
    rep = load_report(args.report)
    failed = (rep.get('failure') or {}).get('rank')
    ranks = sorted(rep['ranks'], key=lambda r: r['rank'])
    excerpt = report_excerpt(rep, failed)
    text_height = 0.13 * len(excerpt)
    fig, (ax, text_ax) = plt.subplots(2, 1, figsize=(10, 0.5 * len(ranks) + 1.6 + text_height),
                                      gridspec_kw={'height_ratios': [0.5 * len(ranks) + 0.6, text_height],
                                                   'hspace': 0.3})
    for y, r in enumerate(ranks):
        if r['rank'] == failed:
            colour = '#e31a1c'
        elif r['state'] == 'exited' and r['exit_code'] == 0:
            colour = '#41ab5d'
        else:
            colour = '#bdbdbd'
        start, end = r['start_s'] or 0, r['end_s'] or rep['wall_time_s']
        ax.barh(y, end - start, left=start, height=0.55, color=colour)
        how = (f'exit {r["exit_code"]}' if r['state'] == 'exited' else
               f'{r["state"]} by {r["signal"]}' if r['state'] == 'killed' else r['state'])
        if r['rank'] == failed:
            how += ': the failure'
        elif r['state'] == 'killed':
            how += ' (stopped by trainrun)'
        rss = f'{r["max_rss_kb"] / 1024:.0f} MiB' if r.get('max_rss_kb') else '-'
        cpu = (f'{r["user_cpu_s"] + r["system_cpu_s"]:.1f} s CPU'
               if r.get('user_cpu_s') is not None else '')
        ax.text(rep['wall_time_s'] * 1.01, y, f'{how} · max RSS {rss} · {cpu}', va='center', fontsize=8)
    ax.set_yticks(range(len(ranks)), [f'rank {r["rank"]} · {r["host"]} · pid {r["pid"]}' for r in ranks])
    ax.invert_yaxis()
    for t, what in ((rep.get('rendezvous_s'), 'rendezvous done'), (rep.get('first_op_s'), 'first collective')):
        if t is not None:
            ax.axvline(t, color='#555555', linestyle=':', linewidth=0.9)
            ax.text(t, len(ranks) - 0.45, f' {what} ({t:.2f} s)', fontsize=7, color='#555555')
    ax.set_xlim(0, rep['wall_time_s'] * 1.6)
    ax.set_xlabel('seconds since trainrun started (start_s to end_s of each rank)')
    for side in ('top', 'right'):
        ax.spines[side].set_visible(False)
    cause = (rep.get('failure') or {}).get('cause') or 'every rank exited 0'
    ax.set_title(f'The --report of a real failing job: outcome "{rep["outcome"]}", exit code {rep["exit_code"]}\n'
                 f'{" ".join(rep["command_line"])}\n{wrap(cause, 130)}', fontsize=8, loc='left')
    text_ax.axis('off')
    # One text per line, indented by an offset: SVG viewers collapse leading spaces.
    for i, line in enumerate(excerpt):
        indent = len(line) - len(line.lstrip(' '))
        where = transforms.offset_copy(text_ax.transAxes, fig=fig, x=indent * 4.2, y=-i * 9.3, units='points')
        text_ax.text(0, 1, line.lstrip(' '), family='DejaVu Sans Mono', fontsize=7, va='top', transform=where)
    fig.savefig(args.out, bbox_inches='tight', metadata=SVG_META)


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = p.add_subparsers(dest='picture', required=True)
    s = sub.add_parser('process-model')
    s.add_argument('--report', required=True)
    s.add_argument('--verbose', required=True, help="the job's stderr with --verbose")
    s.add_argument('--ranks', required=True, help="the job's stdout: each rank's 'pids:' line")
    s.add_argument('out')
    s = sub.add_parser('timeline')
    s.add_argument('--timeline', required=True)
    s.add_argument('--command', required=True, help='the command that wrote it, for the title')
    s.add_argument('--steps', type=int, default=3)
    s.add_argument('out')
    s = sub.add_parser('two-level')
    s.add_argument('--report', required=True)
    s.add_argument('--verbose', required=True)
    s.add_argument('--command', required=True)
    s.add_argument('out')
    s = sub.add_parser('report')
    s.add_argument('--report', required=True)
    s.add_argument('out')
    args = p.parse_args()
    {'process-model': process_model, 'timeline': timeline, 'two-level': two_level, 'report': report}[args.picture](args)


if __name__ == '__main__':
    main()
