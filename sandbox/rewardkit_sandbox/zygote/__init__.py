"""The zygote: one per pool slot, a single-threaded process that spawns one confined
child per task, supervises it, judges its tests and reaps what it left.

``SandboxPool`` starts :mod:`.server` (``Zygote`` and its ``main``); the zygote's other
jobs are objects it holds, one module each: :mod:`.mounts` (namespaces and mounts),
:mod:`.probes` (which layers hold), :mod:`.workdir` (work directories),
:mod:`.supervision` (serving a running task), :mod:`.reaping` (kill and reap),
:mod:`.judge` (the slot's judge process) and :mod:`.judging` (a task's tests).

Standard library only, and nothing imported here: every module the zygote loads is paid
for by every task child it forks.
"""
