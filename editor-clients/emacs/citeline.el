;;; citeline.el --- Ask your documents, with citations, through eglot  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The Citeline authors

;; Author: The Citeline authors
;; Maintainer: The Citeline authors
;; Version: 0.2.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9") (jsonrpc "1.0.14") (seq "2.23"))
;; Keywords: tools, docs, convenience
;; URL: https://github.com/citeline/citeline
;; SPDX-License-Identifier: Apache-2.0

;; This file is not part of GNU Emacs.

;; Licensed under the Apache License, Version 2.0 (the "License"); you may not
;; use this file except in compliance with the License.  You may obtain a copy
;; of the License at http://www.apache.org/licenses/LICENSE-2.0.  Unless
;; required by applicable law or agreed to in writing, software distributed
;; under the License is distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR
;; CONDITIONS OF ANY KIND, either express or implied.

;;; Commentary:

;; Citeline answers questions about your documents with exact citations (file,
;; section, line range, PDF page).  This package is its Emacs client: it runs
;; `citeline serve' through eglot and offers
;;
;;   M-x citeline-ask           the answer in *citeline*, under its grade and a
;;                              label saying how it was made; [n] markers and
;;                              sources are buttons opening the cited place
;;   M-x citeline-search        passages, with links
;;   M-x citeline-copy-answer   the shown answer as Markdown, sources as links,
;;                              on the kill ring
;;   M-x citeline-history       past answers; RET reopens one
;;   M-x citeline-status        the folders, their state and counts
;;   M-x citeline-reindex       bring the folders up to date now
;;   M-x citeline-pause         pause indexing: nothing more is committed,
;;                              changes wait, searches and asks go on
;;   M-x citeline-resume        resume it: what waited is indexed now
;;   M-x citeline-index-folder  serve a folder without a marker (writes a
;;                              minimal citeline.toml into it)
;;   M-x citeline-hover         the passages the sentence at point is about
;;                              (also in eldoc: `citeline-hover-mode')
;;   M-x citeline-doctor        what works and what is missing, with the fix
;;                              for each (`citeline doctor')
;;
;; A documents folder is one holding `citeline.toml' or a `.citeline/' folder
;; (`citeline-root-markers').  Visiting a file under one starts Citeline for it;
;; nothing else does.  Citeline runs *beside* your own language servers: it
;; manages no buffer, so the server eglot runs for your Markdown (or any other)
;; buffers stays theirs.
;;
;; Install (Emacs 29+):
;;
;;   (use-package citeline
;;     :vc (:url "https://github.com/citeline/citeline" :lisp-dir "editor-clients/emacs")
;;     :custom (citeline-server-command '("citeline" "serve"))
;;     :config (citeline-setup))
;;
;; or `M-x package-vc-install' with that URL, or from a clone:
;;
;;   (add-to-list 'load-path "/path/to/citeline/editor-clients/emacs")
;;   (require 'citeline)
;;   (citeline-setup)

;;; Code:

(require 'cl-lib)
(require 'seq)
(require 'subr-x)
(require 'button)
(require 'url-util)
(require 'eglot)
(require 'jsonrpc)

(defgroup citeline nil
  "Ask your documents from Emacs."
  :group 'tools
  :prefix "citeline-")

(defcustom citeline-server-command '("citeline" "serve")
  "Command that starts the Citeline language server."
  :type '(repeat string))

(defcustom citeline-root-markers '("citeline.toml" ".citeline")
  "A folder holding one of these files or folders is a documents folder."
  :type '(repeat string))

(defcustom citeline-auto-start t
  "Non-nil: visiting a file under a documents folder starts Citeline for it."
  :type 'boolean)

(defcustom citeline-initialization-options nil
  "Citeline settings sent as initializationOptions (a plist, camelCase keys).
For example \\='(:search (:topK 5) :answer (:mode \"generative\")); the
answer mode is \"auto\" (the default), \"extractive\" or \"generative\" (see
docs/lsp-extensions.md)."
  :type 'sexp)

(defcustom citeline-request-timeout 300
  "Seconds to wait for an answer (small models on busy machines are slow)."
  :type 'integer)

(defcustom citeline-pdf-viewer 'auto
  "How a PDF citation opens at its page.
`auto': pdf-tools when it is installed and Emacs shows images, else
doc-view when it can render, else the first of `citeline-pdf-viewers'
found on PATH, else the system's handler (which is not told the page).
`pdf-tools' or `doc-view': that one.  A list of strings: an external
command, where %f is the file and %p the page, e.g.
\(\"zathura\" \"--page=%p\" \"%f\")."
  :type '(choice (const auto) (const pdf-tools) (const doc-view) (repeat string)))

(defcustom citeline-pdf-viewers
  '(("zathura" "--page=%p" "%f")
    ("sioyek" "--page" "%p" "%f")
    ("okular" "-p" "%p" "%f")
    ("evince" "--page-label=%p" "%f")
    ("qpdfview" "--unique" "%f#%p")
    ("mupdf" "%f" "%p"))
  "External PDF viewers that can open at a page, tried in order by `auto'."
  :type '(repeat (repeat string)))

(defvar citeline-last-status nil
  "The latest `citeline/status' notification (a plist).")

(defvar citeline-last-answer nil
  "The latest answer (a `citeline/ask' result plist), once it is complete.")

(defvar citeline-last-error nil
  "The error of the latest ask, if it failed.")

(defvar citeline-shown-answer nil
  "The answer the *citeline* buffer shows (what `citeline-copy-answer' copies).")

(defvar citeline-last-history nil
  "The latest `citeline/history' result (a plist).")

(defvar citeline-last-pdf-open nil
  "How the last PDF citation was opened: (pdf-tools FILE PAGE),
\(doc-view FILE PAGE), (command ARGV) or (system FILE PAGE).")

(defvar citeline--server nil
  "The running Citeline server (one for every documents folder).")

(defvar citeline--folders nil
  "The documents folders the server was told about (directory names).")

(defvar citeline--streams (make-hash-table :test #'equal)
  "partialResultToken -> function called with each streamed piece of text.")

(defvar citeline--counter 0)

(defconst citeline--empty-object (make-hash-table :size 1)
  "The empty JSON object.")

;;;; The server

(defclass citeline-server (eglot-lsp-server) ()
  :documentation "The Citeline language server.")

(cl-defmethod eglot-initialization-options ((_server citeline-server))
  (or citeline-initialization-options citeline--empty-object))

(cl-defmethod eglot-workspace-folders ((_server citeline-server))
  "Only the documents folders, never the project's external roots."
  (vconcat (mapcar (lambda (dir) (list :uri (citeline--path-to-uri dir)
                                       :name (abbreviate-file-name dir)))
                   citeline--folders)))

(cl-defmethod eglot-handle-notification
  ((_server citeline-server) (_method (eql citeline/status)) &rest params)
  "Keep the folders' state from a `citeline/status' notification."
  (setq citeline-last-status params))

(cl-defmethod eglot-handle-notification
  ((server citeline-server) (method (eql $/progress)) &rest params &key token value
   &allow-other-keys)
  "Route streamed answer text (`$/progress' with a `delta') to its ask."
  (let ((stream (and (stringp (plist-get value :delta))
                     (null (plist-get value :kind))
                     (gethash (format "%s" token) citeline--streams))))
    (if stream
        (funcall stream (plist-get value :delta))
      (apply #'cl-call-next-method server method params))))

(defun citeline--remember-server (server)
  "Keep SERVER when it is Citeline's (from `eglot-server-initialized-hook')."
  (when (cl-typep server 'citeline-server)
    (setq citeline--server server)))

(add-hook 'eglot-server-initialized-hook #'citeline--remember-server)

(defun citeline--path-to-uri (path)
  "The file:// URI of PATH."
  (concat "file://"
          (url-hexify-string (directory-file-name (expand-file-name path))
                             url-path-allowed-chars)))

(defun citeline--uri-to-path (uri)
  "The local file a file:// URI names (without its #fragment)."
  (let ((path (replace-regexp-in-string "\\`file://" "" (replace-regexp-in-string "#.*\\'" "" uri))))
    (decode-coding-string (url-unhex-string path) 'utf-8)))

(defun citeline-root (&optional path)
  "The documents folder PATH (default: this buffer's file) is in, or nil.
That is the nearest folder at or above it holding one of
`citeline-root-markers'; never a folder merely because Emacs is there."
  (let ((path (or path buffer-file-name)))
    (when path
      (when-let ((root (locate-dominating-file
                        path
                        (lambda (dir)
                          (and (file-directory-p dir)
                               (seq-some (lambda (marker)
                                           (file-exists-p (expand-file-name marker dir)))
                                         citeline-root-markers))))))
        (file-name-as-directory (expand-file-name root))))))

(defun citeline--live-p ()
  (and citeline--server (jsonrpc-running-p citeline--server)))

(defun citeline--add-folder (root)
  "Tell the running server about ROOT, unless it knows it already."
  (unless (member root citeline--folders)
    (setq citeline--folders (append citeline--folders (list root)))
    (jsonrpc-notify citeline--server :workspace/didChangeWorkspaceFolders
                    (list :event (list :added (vector (list :uri (citeline--path-to-uri root)
                                                            :name (abbreviate-file-name root)))
                                       :removed [])))))

(defun citeline-start (root)
  "Start Citeline serving the documents folder ROOT (or add ROOT to it).
It runs beside any other server: it manages no buffer, so eglot keeps
serving your buffers with the servers you chose.  Returns the server."
  (interactive (list (or (citeline-root) (read-directory-name "Documents folder: "))))
  (let ((root (file-name-as-directory (expand-file-name root))))
    (if (citeline--live-p)
        (citeline--add-folder root)
      (setq citeline--server nil
            citeline--folders (list root)
            citeline-last-status nil)
      ;; From a buffer no server manages, so that `eglot' replaces nothing.
      (with-temp-buffer
        (setq default-directory root)
        (eglot nil (cons 'transient root) 'citeline-server citeline-server-command "markdown"))
      (unless citeline--server
        (error "Citeline could not be started: %s" (string-join citeline-server-command " "))))
    citeline--server))

(defun citeline-stop ()
  "Stop the Citeline server."
  (interactive)
  (when (citeline--live-p)
    (eglot-shutdown citeline--server))
  (setq citeline--server nil citeline--folders nil))

(defcustom citeline-hover-in-documents t
  "Non-nil: files under a documents folder get `citeline-hover-mode'."
  :type 'boolean)

(defun citeline--maybe-start ()
  "Start Citeline for this file's documents folder, when it has one."
  (when citeline-auto-start
    (when-let ((root (citeline-root)))
      (citeline-start root)
      (when citeline-hover-in-documents
        (citeline-hover-mode 1)))))

;;;###autoload
(defun citeline-setup ()
  "Start Citeline whenever a file under a documents folder is visited.
It adds nothing to `eglot-server-programs': Citeline runs beside the
servers you use for those files."
  (add-hook 'find-file-hook #'citeline--maybe-start))

(defun citeline--server ()
  (or (and (citeline--live-p) citeline--server)
      (when-let ((root (citeline-root)))
        (citeline-start root))
      (user-error "No documents folder is served: visit a file under a folder with citeline.toml, or M-x citeline-index-folder")))

(defun citeline--request (method params)
  (jsonrpc-request (citeline--server) method params :timeout citeline-request-timeout))

;;;; Citations

(defun citeline--local-copy-differs (item)
  "Non-nil when ITEM's file here is not the one the team index holds.
Its lines may then say something else: the passage is shown instead."
  (member (plist-get item :local_copy) '("differs" "missing")))

(defun citeline--show-passage (item)
  "Show ITEM's passage as the index holds it, saying why, in a buffer of its own."
  (let ((buffer (get-buffer-create "*citeline passage*"))
        (text (plist-get item :text)))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (citeline--location item) "\n")
        (insert "(" (or (citeline--string (plist-get item :local_copy_note))
                        (plist-get item :local_copy))
                "; the passage as the team index holds it)\n\n")
        (insert (if (stringp text) text "") "\n")
        (goto-char (point-min)))
      (special-mode))
    (pop-to-buffer buffer)
    buffer))

(defun citeline--fill (template file page)
  (replace-regexp-in-string
   "%[fp]" (lambda (match) (if (equal match "%f") file (number-to-string page)))
   template t t))

(defun citeline-pdf-open-plan (file page)
  "How FILE opens at PAGE, following `citeline-pdf-viewer'.
One of (pdf-tools FILE PAGE), (doc-view FILE PAGE), (command ARGV) or
\(system FILE PAGE)."
  (let ((viewer citeline-pdf-viewer))
    (cond
     ((consp viewer)
      (list 'command (mapcar (lambda (part) (citeline--fill part file page)) viewer)))
     ((eq viewer 'pdf-tools) (list 'pdf-tools file page))
     ((eq viewer 'doc-view) (list 'doc-view file page))
     ((and (display-graphic-p) (require 'pdf-view nil t)) (list 'pdf-tools file page))
     ((and (display-graphic-p) (require 'doc-view nil t) (doc-view-mode-p 'pdf))
      (list 'doc-view file page))
     (t
      (let ((known (seq-find (lambda (cmd) (executable-find (car cmd))) citeline-pdf-viewers)))
        (if known
            (list 'command (mapcar (lambda (part) (citeline--fill part file page)) known))
          (list 'system file page)))))))

(declare-function pdf-view-goto-page "pdf-view" (page &optional window))
(declare-function pdf-view-mode "pdf-view" ())
(declare-function doc-view-goto-page "doc-view" (page))
(declare-function doc-view-mode-p "doc-view" (type))

(defun citeline-open-pdf (file page)
  "Open the PDF FILE at PAGE (see `citeline-pdf-viewer')."
  (let ((plan (citeline-pdf-open-plan file page)))
    (setq citeline-last-pdf-open plan)
    (pcase plan
      (`(pdf-tools ,file ,page)
       (require 'pdf-view)
       (find-file-other-window file)
       (unless (derived-mode-p 'pdf-view-mode) (pdf-view-mode))
       (pdf-view-goto-page page))
      (`(doc-view ,file ,page)
       (require 'doc-view)
       (find-file-other-window file)
       (unless (derived-mode-p 'doc-view-mode) (doc-view-mode))
       (doc-view-goto-page page))
      (`(command ,argv)
       (apply #'start-process "citeline-pdf" nil argv))
      (`(system ,file ,page)
       (let ((opener (cond ((eq system-type 'darwin) "open")
                           ((executable-find "xdg-open") "xdg-open"))))
         (if opener
             (start-process "citeline-pdf" nil opener file)
           (browse-url-of-file file))
         (message "Citeline: opened %s: see page %d (set `citeline-pdf-viewer' to open at the page)"
                  (file-name-nondirectory file) page))))
    plan))

(defun citeline--open (item)
  "Open the place a citation or hit ITEM points at: the cited lines, a PDF
at its page, or the indexed passage when the local copy of its file
differs from the indexed one."
  (let ((file (citeline--uri-to-path (plist-get item :uri)))
        (page (plist-get item :page)))
    (cond
     ((citeline--local-copy-differs item) (citeline--show-passage item))
     ((numberp page) (citeline-open-pdf file page))
     (t
      (let* ((range (plist-get item :range))
             (line (plist-get (plist-get range :start) :line)))
        (find-file-other-window file)
        (goto-char (point-min))
        (forward-line (or line 0)))))))

(defun citeline--location (item)
  "Where ITEM points, for people: \"path:12-14\" or \"path, page 3\"."
  (let ((page (plist-get item :page))
        (start (plist-get item :start_line))
        (end (plist-get item :end_line)))
    (cond ((numberp page) (format "%s, page %d" (plist-get item :path) page))
          ((and (numberp start) (or (not (numberp end)) (= start end)))
           (format "%s:%d" (plist-get item :path) start))
          ((numberp start) (format "%s:%d-%d" (plist-get item :path) start end))
          (t (plist-get item :path)))))

(defun citeline--insert-items (items)
  (seq-doseq (item items)
    (let ((n (plist-get item :n))
          (section (plist-get item :section)))
      (insert (if (numberp n) (format "[%d] " n) "- "))
      (insert-text-button (citeline--location item)
                          'action (lambda (_) (citeline--open item))
                          'follow-link t)
      (when (and (stringp section) (not (string-empty-p section)))
        (insert "  " section))
      (when (eq (plist-get item :changed) t)
        (insert "  (changed since)"))
      (insert "\n"))))

;;;; Labels

(defun citeline--string (value)
  "VALUE when it is a non-empty string (JSON null arrives as :null or nil)."
  (and (stringp value) (not (string-empty-p value)) value))

(defun citeline-answer-label (answer)
  "The label saying how ANSWER was made, as the server words it; nil for a refusal.
The server's `mode_label', then ` · ' and its `fallback_note' after a fallback."
  (let ((label (citeline--string (plist-get answer :mode_label)))
        (note (citeline--string (plist-get answer :fallback_note))))
    (unless (or (eq (plist-get answer :refused) t) (null label))
      (if note (concat label " · " note) label))))

(defun citeline-grade-label (answer)
  "The server's grade text for ANSWER, shown verbatim (nil without a grade)."
  (citeline--string (plist-get answer :grade_label)))

;;;; Copy

(defun citeline--citation-link (item)
  "The link ITEM opens: file#L12, file#L12-L14, or the PDF at its page."
  (let ((base (replace-regexp-in-string "#.*\\'" "" (plist-get item :uri)))
        (page (plist-get item :page))
        (start (plist-get item :start_line))
        (end (plist-get item :end_line)))
    (cond ((numberp page) (format "%s#page=%d" base page))
          ((and (numberp start) (numberp end) (> end start)) (format "%s#L%d-L%d" base start end))
          ((numberp start) (format "%s#L%d" base start))
          (t base))))

(defun citeline--source-line (prefix item)
  (let ((section (citeline--string (plist-get item :section))))
    (format "%s[%s](%s)%s%s" prefix
            (replace-regexp-in-string "\\([][\\]\\)" "\\\\\\1" (citeline--location item))
            (replace-regexp-in-string
             "[ ()]" (lambda (c) (pcase c (" " "%20") ("(" "%28") (_ "%29")))
             (citeline--citation-link item) t t)
            (if section (concat " — " section) "")
            (if (eq (plist-get item :changed) t) " (changed since)" ""))))

(defun citeline-answer-markdown (answer)
  "ANSWER as Markdown, as every Citeline client copies it: the question, when it
was asked (a history entry), the grade when it is not a plain answer, the text
with its [n] markers, and the sources as file:line / page links (a refusal:
the nearest passages)."
  (let* ((grade (citeline-grade-label answer))
         (time (citeline--string (plist-get answer :time)))
         (out (list (concat "## " (string-trim (replace-regexp-in-string
                                                 "[ \t\n\r]+" " " (or (plist-get answer :question) ""))))
                    "")))
    (when time
      (setq out (append out (list (format "*From Citeline's history, asked %s%s.*" time
                                          (if (eq (plist-get answer :stale) t)
                                              "; its sources changed since" ""))
                                  ""))))
    (if (eq (plist-get answer :refused) t)
        (let ((hits (seq-take (plist-get answer :hits) 3)))
          (setq out (append out (list (replace-regexp-in-string
                                       "\\.\\.\\*\\*\\'" ".**"
                                       (format "**%s.**" (or grade (plist-get answer :grade))))
                                      "")))
          (when (> (length hits) 0)
            (setq out (append out '("Nearest passages:" "")
                              (seq-map (lambda (h) (citeline--source-line "- " h)) hits)))))
      (when (and grade (not (equal (plist-get answer :grade) "answer")))
        (setq out (append out (list (format "> **%s**" grade) ""))))
      (setq out (append out (list (string-trim-right (or (plist-get answer :answer) "")) "")))
      (let ((citations (plist-get answer :citations)))
        (when (> (length citations) 0)
          (setq out (append out '("Sources:" "")
                            (seq-map (lambda (c) (citeline--source-line (format "- [%d] " (plist-get c :n)) c))
                                     citations))))))
    (concat (string-trim-right (string-join out "\n")) "\n")))

;;;###autoload
(defun citeline-copy-answer ()
  "Put the shown answer on the kill ring as Markdown, with its sources as links."
  (interactive)
  (unless citeline-shown-answer
    (user-error "No answer to copy: M-x citeline-ask first"))
  (let ((text (citeline-answer-markdown citeline-shown-answer)))
    (kill-new text)
    (message "Citeline: copied the answer with %d sources"
             (length (plist-get citeline-shown-answer :citations)))
    text))

;;;; The answer buffer

(defun citeline--button-markers (start end citations)
  "Make the [n] markers between START and END buttons opening their CITATIONS.
Markers inside fenced code blocks stay text."
  (save-excursion
    (goto-char start)
    (let ((in-code nil))
      (while (< (point) end)
        (let ((eol (min end (line-end-position))))
          (if (looking-at-p "[ \t]*\\(```\\|~~~\\)")
              (setq in-code (not in-code))
            (unless in-code
              (while (re-search-forward "\\[\\([0-9]+\\)\\]" eol t)
                (let* ((n (string-to-number (match-string 1)))
                       (citation (seq-find (lambda (c) (equal (plist-get c :n) n)) citations)))
                  (when citation
                    (make-text-button (match-beginning 0) (match-end 0)
                                      'action (lambda (_) (citeline--open citation))
                                      'follow-link t
                                      'help-echo (format "Open %s" (citeline--location citation))))))))
          (forward-line 1))))))

(defun citeline--show (question &optional text answer)
  "Show QUESTION in the *citeline* buffer with streamed TEXT, or the final ANSWER.
Above a final answer: the server's grade label, then how it was made."
  (with-current-buffer (get-buffer-create "*citeline*")
    (let ((inhibit-read-only t))
      (erase-buffer)
      (insert (propertize question 'face 'bold) "\n\n")
      (if (null answer)
          (insert (if (and text (not (string-empty-p text))) text "Searching the documents…") "\n")
        (let* ((citations (plist-get answer :citations))
               (grade (citeline-grade-label answer))
               (label (citeline-answer-label answer))
               (time (citeline--string (plist-get answer :time))))
          (when grade
            (insert (propertize grade 'face 'bold) "\n"))
          (when label
            (insert (propertize label 'face 'italic) "\n"))
          (when (or grade label)
            (insert "\n"))
          (when time
            (insert (propertize (concat "Asked " time
                                        (if (eq (plist-get answer :stale) t)
                                            " · a cited source changed since: it may say something else now"
                                          ""))
                                'face 'italic)
                    "\n\n"))
          (let ((start (point)))
            ;; The final text replaces whatever streamed.
            (insert (or (plist-get answer :answer) "") "\n")
            (citeline--button-markers start (point) citations))
          (when (> (length citations) 0)
            (insert "\nSources:\n")
            (citeline--insert-items citations))))
      (goto-char (point-min))
      (special-mode))
    (display-buffer (current-buffer))
    (current-buffer)))

(defun citeline-show-answer (answer)
  "Show the finished ANSWER (an ask's, or a reopened history entry)."
  (setq citeline-shown-answer answer)
  (citeline--show (or (plist-get answer :question) "") nil answer))

;;;###autoload
(defun citeline-ask (question &optional callback)
  "Ask QUESTION of the documents; the answer streams into the *citeline* buffer.
When the request completes, the buffer shows the final answer (it replaces the
streamed text) under its grade and a label saying how it was made, and its
citations.  Sets `citeline-last-answer' (or `citeline-last-error') and calls
CALLBACK, if given, with the answer.  Returns the request's token."
  (interactive "sAsk your documents: ")
  (let* ((server (citeline--server))
         (token (format "citeline-emacs-%d-%d" (emacs-pid) (cl-incf citeline--counter)))
         (text ""))
    (setq citeline-last-answer nil
          citeline-last-error nil)
    (citeline--show question)
    (puthash token (lambda (delta)
                     (setq text (concat text delta))
                     (citeline--show question text))
             citeline--streams)
    (jsonrpc-async-request
     server :citeline/ask (list :question question :partialResultToken token)
     :timeout citeline-request-timeout
     :success-fn (lambda (answer)
                   (remhash token citeline--streams)
                   (setq citeline-last-answer answer)
                   (citeline-show-answer (plist-put answer :question
                                                    (or (plist-get answer :question) question)))
                   (when callback (funcall callback answer)))
     :error-fn (lambda (error)
                 (remhash token citeline--streams)
                 (setq citeline-last-error error)
                 (citeline--show question (format "Citeline could not answer: %s"
                                                  (or (plist-get error :message) error))))
     :timeout-fn (lambda ()
                   (remhash token citeline--streams)
                   (setq citeline-last-error '(:message "timed out"))
                   (citeline--show question "Citeline could not answer: timed out")))
    token))

(defun citeline-ask-and-wait (question)
  "Ask QUESTION (as `citeline-ask') and return the answer once it is complete."
  (citeline-ask question)
  (let ((deadline (+ (float-time) citeline-request-timeout)))
    (while (and (null citeline-last-answer) (null citeline-last-error)
                (< (float-time) deadline))
      (accept-process-output nil 0.05)))
  (when citeline-last-error
    (error "Citeline could not answer: %S" citeline-last-error))
  citeline-last-answer)

;;;###autoload
(defun citeline-search (query)
  "Search the documents for QUERY; list the passages with links."
  (interactive "sSearch your documents: ")
  (let ((hits (plist-get (citeline--request :citeline/search (list :query query)) :hits)))
    (with-current-buffer (get-buffer-create "*citeline search*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (propertize query 'face 'bold) "\n\n")
        (citeline--insert-items hits)
        (goto-char (point-min))
        (special-mode))
      (display-buffer (current-buffer)))
    hits))

;;;; History

(defun citeline-history-open (id)
  "Reopen the recorded answer ID in the *citeline* buffer."
  (let ((entry (citeline--request :citeline/historyEntry (list :id id))))
    (citeline-show-answer entry)
    entry))

;;;###autoload
(defun citeline-history (&optional query)
  "List past answers of the served folders, newest first (matching QUERY, if
given); RET on one reopens it."
  (interactive (list (let ((q (read-string "Filter (empty: all): "))) (unless (string-empty-p q) q))))
  (let* ((params (if (and query (not (string-empty-p query))) (list :query query :limit 50) (list :limit 50)))
         (result (citeline--request :citeline/history params))
         (entries (plist-get result :entries)))
    (setq citeline-last-history result)
    (with-current-buffer (get-buffer-create "*citeline history*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (format "Citeline history: %d of %d (RET reopens an answer)\n\n"
                        (length entries) (or (plist-get result :total) 0)))
        (seq-doseq (entry entries)
          (let ((id (plist-get entry :id)))
            (insert (replace-regexp-in-string "\\.[0-9]+\\|Z\\'" ""
                                              (replace-regexp-in-string "T" " " (plist-get entry :time)))
                    "  " (format "%-8s " (plist-get entry :grade)))
            (insert-text-button (plist-get entry :question)
                                'action (lambda (_) (citeline-history-open id))
                                'follow-link t
                                'citeline-id id)
            (insert (format "  (%d sources) — %s\n" (or (plist-get entry :sources) 0)
                            (replace-regexp-in-string "\n" " " (or (plist-get entry :preview) ""))))))
        (goto-char (point-min))
        (special-mode))
      (display-buffer (current-buffer)))
    result))

;;;; Hover

(defun citeline--position ()
  "Point as an LSP position, in UTF-16 code units (what eglot negotiates)."
  (list :line (1- (line-number-at-pos))
        :character (/ (- (length (encode-coding-region (line-beginning-position) (point)
                                                       'utf-16 t))
                         2)
                      2)))

(defun citeline--hover-text (hover)
  "The text of a `textDocument/hover' result HOVER, or nil."
  (let ((contents (and (listp hover) (plist-get hover :contents))))
    (cond ((stringp contents) contents)
          ((and (listp contents) (stringp (plist-get contents :value))) (plist-get contents :value)))))

(defun citeline--hover-params ()
  (list :textDocument (list :uri (citeline--path-to-uri buffer-file-name))
        :position (citeline--position)))

;;;###autoload
(defun citeline-hover ()
  "Show the passages of the documents the sentence at point is about."
  (interactive)
  (unless buffer-file-name
    (user-error "This buffer visits no file"))
  (let ((text (citeline--hover-text (citeline--request :textDocument/hover (citeline--hover-params)))))
    (if (called-interactively-p 'interactive)
        (message "%s" (or text "Citeline: no passage about this"))
      text)))

(defun citeline--eldoc (callback &rest _)
  "Eldoc: the passages the sentence at point is about, from Citeline."
  (when (and buffer-file-name (citeline--live-p))
    (jsonrpc-async-request citeline--server :textDocument/hover (citeline--hover-params)
                           :success-fn (lambda (hover)
                                         (when-let ((text (citeline--hover-text hover)))
                                           (funcall callback text)))
                           :error-fn #'ignore :timeout-fn #'ignore)
    t))

(define-minor-mode citeline-hover-mode
  "Eldoc shows the passages of your documents the sentence at point is about.
It adds to eldoc, beside whatever your own server shows."
  :lighter nil
  (if citeline-hover-mode
      (add-hook 'eldoc-documentation-functions #'citeline--eldoc t t)
    (remove-hook 'eldoc-documentation-functions #'citeline--eldoc t)))

;;;; Folders

(defun citeline--paused-p (folder)
  "Non-nil when FOLDER's indexing is paused."
  (eq (plist-get folder :paused) t))

(defun citeline--shown-state (folder)
  "FOLDER's state as shown: \"pausing\" while a paused folder finishes the file
it is committing, then \"paused\"; an error stays an error."
  (let ((state (plist-get folder :state)))
    (cond ((or (not (citeline--paused-p folder)) (equal state "error")) state)
          ((equal state "indexing") "pausing")
          (t "paused"))))

(defun citeline--folder-line (folder)
  (concat
   (format "%s: %s, %d files, %d chunks, %d %s"
           (citeline--uri-to-path (plist-get folder :uri))
           (citeline--shown-state folder) (plist-get folder :files)
           (plist-get folder :chunks) (plist-get folder :pending)
           (if (citeline--paused-p folder) "waiting" "pending"))
   (if (stringp (plist-get folder :collection))
       (format "; team index %s, generation %s, updated %s"
               (plist-get folder :collection) (plist-get folder :generation)
               (or (plist-get folder :last_update) "never"))
     "")
   (if (stringp (plist-get folder :message))
       (format " (%s)" (plist-get folder :message))
     "")))

;;;###autoload
(defun citeline-status ()
  "Show the state of the documents folders."
  (interactive)
  (let ((status (citeline--request :citeline/status citeline--empty-object)))
    (message "%s" (mapconcat #'identity
                             (append (mapcar #'citeline--folder-line (plist-get status :folders))
                                     ;; Folders told about and not served (no marker), and why.
                                     (mapcar (lambda (f) (format "%s: %s" (plist-get f :docs)
                                                                 (plist-get f :reason)))
                                             (plist-get status :unserved)))
                             "\n"))
    status))

;;;###autoload
(defun citeline-reindex (&optional folder)
  "Bring the documents folders (or FOLDER) up to date now; report what changed."
  (interactive)
  (let* ((params (if folder (list :folder (citeline--path-to-uri folder)) citeline--empty-object))
         (result (citeline--request :citeline/reindex params)))
    (message "%s"
             (mapconcat (lambda (f)
                          (format "%s: %d files, %d chunks, %d embedded"
                                  (citeline--uri-to-path (plist-get f :uri))
                                  (plist-get f :files) (plist-get f :chunks) (plist-get f :embedded)))
                        (plist-get result :folders) "\n"))
    result))

(defun citeline--set-paused (method folder done)
  "Send METHOD (pause or resume) for FOLDER (nil: every folder); say DONE of each."
  (let* ((params (if folder (list :folder (citeline--path-to-uri folder)) citeline--empty-object))
         (result (citeline--request method params)))
    (message "%s"
             (mapconcat (lambda (f)
                          (format "%s: indexing %s (%d files waiting)"
                                  (citeline--uri-to-path (plist-get f :uri)) done
                                  (plist-get f :pending)))
                        (plist-get result :folders) "\n"))
    result))

;;;###autoload
(defun citeline-pause (&optional folder)
  "Pause indexing of the documents folders (or FOLDER).
The file being committed finishes; nothing more is committed and changes
wait, while searches and asks use what is indexed.  `citeline-resume'
goes on (so does a restart of the server)."
  (interactive)
  (citeline--set-paused :citeline/pauseIndexing folder "paused"))

;;;###autoload
(defun citeline-resume (&optional folder)
  "Resume indexing of the documents folders (or FOLDER).
What waited is indexed now; nothing committed is embedded again."
  (interactive)
  (citeline--set-paused :citeline/resumeIndexing folder "resumed"))

(defun citeline--doctor-command (&optional docs)
  "`citeline doctor --json' from `citeline-server-command' (the part before
\"serve\"), for the documents folder DOCS."
  (append (seq-take-while (lambda (part) (not (equal part "serve"))) citeline-server-command)
          '("doctor")
          (when docs (list "--docs" (directory-file-name (expand-file-name docs))))
          '("--json")))

;;;###autoload
(defun citeline-doctor (&optional docs)
  "Show what works and what is missing, with the fix for each (`citeline doctor').
DOCS is the documents folder to check (default: this buffer's)."
  (interactive)
  (let* ((docs (or docs (citeline-root) (car citeline--folders)))
         (command (citeline--doctor-command docs))
         (code nil)
         (output (with-temp-buffer
                   (setq code (apply #'call-process (car command) nil (list t nil) nil (cdr command)))
                   (buffer-string)))
         (report (ignore-errors (json-parse-string output :object-type 'plist :array-type 'list))))
    (with-current-buffer (get-buffer-create "*citeline doctor*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (propertize (string-join command " ") 'face 'bold) "\n\n")
        (cond
         ((null report)
          (insert (format "No report (exit status %s): this Citeline may have no `doctor' command; upgrade it.\n%s"
                          code output)))
         (t
          (dolist (check (plist-get report :checks))
            (insert (format "%-8s %s: %s\n" (plist-get check :level) (plist-get check :area)
                            (plist-get check :summary)))
            (when (plist-get check :fix)
              (insert (format "%-8s fix: %s\n" "" (plist-get check :fix)))))
          (insert (if (eq (plist-get report :ok) t)
                      "\nAll is well.\n"
                    (format "\n%s problem(s): see the fixes above.\n" (plist-get report :problems))))))
        (goto-char (point-min))
        (special-mode))
      (display-buffer (current-buffer))
      report)))

;;;###autoload
(defun citeline-index-folder (dir)
  "Serve DIR as a documents folder, although it has no marker.
The server writes a minimal citeline.toml into it (`citeline/indexFolder'),
so it is served again next time.  Returns the folder's status."
  (interactive (list (read-directory-name "Index folder: " default-directory)))
  (let* ((dir (file-name-as-directory (expand-file-name dir))))
    (unless (file-directory-p dir)
      (user-error "%s is not a folder" dir))
    (unless (citeline--live-p)
      (citeline-start dir))
    (let ((folder (jsonrpc-request citeline--server :citeline/indexFolder
                                   (list :folder (citeline--path-to-uri dir))
                                   :timeout citeline-request-timeout)))
      (message "Citeline: serving %s (%s)" dir (plist-get folder :state))
      folder)))

(provide 'citeline)
;;; citeline.el ends here
