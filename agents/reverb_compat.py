"""Bridges dm-acme 0.4.0's adders and dm-reverb 0.7.2 (the TF 2.8 pair).

Acme 0.4.0 passes `get_signature_timeout_ms` to Client.trajectory_writer,
an argument Reverb added after 0.7.2; 0.7.2 would raise TypeError on the
first transition. The signature lookup it bounds is not needed here: our
tables are created with explicit signatures.
"""
import reverb


class AdderClient:
  """A reverb.Client whose trajectory_writer accepts Acme 0.4.0's call."""

  def __init__(self, client: reverb.Client):
    self._client = client

  def trajectory_writer(self, num_keep_alive_refs: int,
                        get_signature_timeout_ms=None, **kwargs):
    del get_signature_timeout_ms  # Unknown to reverb 0.7.2; see module doc.
    return self._client.trajectory_writer(num_keep_alive_refs, **kwargs)

  def __getattr__(self, name):
    return getattr(self._client, name)
