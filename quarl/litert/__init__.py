"""LiteRT models: run in-process, or proven loadable in a child process first.

Light on purpose (numpy + LiteRT only): the probe's child imports it.
"""
from quarl.litert.interpreter import InvalidModelError
from quarl.litert.interpreter import LiteRTPolicy
from quarl.litert.interpreter import load_interpreter
from quarl.litert.probe import ModelProbe

__all__ = ['InvalidModelError', 'LiteRTPolicy', 'ModelProbe',
           'load_interpreter']
