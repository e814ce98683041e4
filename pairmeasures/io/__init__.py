"""Floor 2: the package's strict file readers and the policies every floor reads files through.

Every reader names the file and the line of a problem (:class:`~pairmeasures.io.beir.DataFileError`, a
:class:`~pairmeasures.io.errors.SideInfoError`): the line readers and the BEIR layout (:mod:`~pairmeasures.io.beir`),
TREC and TSV run files (:mod:`~pairmeasures.io.runfiles`, a document ranked twice refused by
:mod:`~pairmeasures.io.repeats`); the one cache policy by content (:mod:`~pairmeasures.io.memo`: ``Memo`` in the
process, ``DiskMemo`` on disk); progress bars and their log lines (:mod:`~pairmeasures.io.progress`). It imports
nothing of pairmeasures but the atomic-write and ownership modules, and nothing heavy: each module loads pandas or numpy only where it reads.
"""
