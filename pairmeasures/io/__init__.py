"""Floor 2: the package's strict file readers and the policies every floor reads files through.

Every reader names the file and the line of a problem (:class:`~pairmeasures.io.beir.DataFileError`, a
:class:`~pairmeasures.io.errors.SideInfoError`): the line readers and the BEIR layout (:mod:`~pairmeasures.io.beir`),
TREC and TSV run files (:mod:`~pairmeasures.io.runfiles`, a document ranked twice refused by
:mod:`~pairmeasures.io.repeats`); the one cache policy by content (:mod:`~pairmeasures.io.memo`: ``Memo`` in the
process, ``DiskMemo`` on disk); progress bars and their log lines (:mod:`~pairmeasures.io.progress`); a BEIR folder's documents in an
on-disk store looked up by id (:mod:`~pairmeasures.io.docstore`, read through
:class:`~pairmeasures.io.beirfolder.StoredFolder`), so no reader holds a corpus in memory; the cache folder
(:func:`~pairmeasures.io.memo.cache_root`). It imports
nothing of pairmeasures but the atomic-write and ownership modules, and nothing heavy: each module loads pandas or numpy only where it reads.
"""
