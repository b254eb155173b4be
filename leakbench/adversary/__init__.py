"""The adversarial leak generator's parts, one module per class of disguise.

Built independently of the leak guard (it reads none of the guard's modules or lists) so the
guard can be measured on forms it was never tuned on. The entry point is
``leakbench.adversary_corpus``; ``canon`` holds this generator's own idea of "public".
"""
