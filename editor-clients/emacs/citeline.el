;;; citeline.el --- Ask your documents, with citations, through eglot  -*- lexical-binding: t; -*-

;; Keywords: tools, docs
;; Package-Requires: ((emacs "28.1") (eglot "1.9"))

;;; Commentary:

;; A minimal Emacs client for `citeline serve' (see docs/lsp-extensions.md).
;;
;;   (add-to-list 'load-path "/path/to/citeline/editor-clients/emacs")
;;   (require 'citeline)
;;   (setq citeline-server-command '("/path/to/citeline/.venv/bin/citeline" "serve"))
;;   (citeline-setup)
;;
;; Then `M-x eglot' in a Markdown, Org or text buffer of your documents folder,
;; and `M-x citeline-ask' / `M-x citeline-search' / `M-x citeline-status'.
;; The answer streams into the *citeline* buffer and settles to the final text
;; under a label saying how it was made ("Quoted from your documents", or
;; "Written by <model>, checked against sources"); its [n] markers and the
;; sources listed under it are buttons that open the cited lines.
;; Hover (eldoc) shows the passages the sentence at point is about; documents
;; that cannot be indexed get a diagnostic (flymake).

;;; Code:

(require 'eglot)
(require 'jsonrpc)
(require 'button)
(require 'subr-x)

(defgroup citeline nil
  "Ask your documents from Emacs."
  :group 'tools)

(defcustom citeline-server-command '("citeline" "serve")
  "Command that starts the Citeline language server."
  :type '(repeat string))

(defcustom citeline-modes '(markdown-mode gfm-mode org-mode text-mode rst-mode)
  "Major modes in which eglot uses Citeline."
  :type '(repeat symbol))

(defcustom citeline-initialization-options nil
  "Citeline settings sent as initializationOptions (a plist, camelCase keys).
For example \\='(:search (:topK 5) :answer (:mode \"generative\")); the
answer mode is \"auto\" (the default), \"extractive\" or \"generative\" (see
docs/lsp-extensions.md)."
  :type 'sexp)

(defcustom citeline-request-timeout 300
  "Seconds to wait for an answer (small models on busy machines are slow)."
  :type 'integer)

(defvar citeline-last-status nil
  "The latest `citeline/status' notification (a plist).")

(defvar citeline-last-answer nil
  "The latest answer (a `citeline/ask' result plist), once it is complete.")

(defvar citeline-last-error nil
  "The error of the latest ask, if it failed.")

(defvar citeline--streams (make-hash-table :test #'equal)
  "partialResultToken -> function called with each streamed piece of text.")

(defvar citeline--counter 0)

(defclass citeline-server (eglot-lsp-server) ()
  :documentation "The Citeline language server.")

(cl-defmethod eglot-initialization-options ((_server citeline-server))
  (or citeline-initialization-options eglot--{}))

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

;;;###autoload
(defun citeline-setup ()
  "Register Citeline with eglot for `citeline-modes'."
  (add-to-list 'eglot-server-programs
               (cons citeline-modes (cons 'citeline-server citeline-server-command))))

(defun citeline--server ()
  (or (eglot-current-server)
      (user-error "No Citeline server here: run M-x eglot in a document buffer")))

(defun citeline--request (method params)
  (jsonrpc-request (citeline--server) method params :timeout citeline-request-timeout))

(defun citeline--uri-file (uri)
  (eglot--uri-to-path (replace-regexp-in-string "#.*\\'" "" uri)))

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
        (insert (if (equal (plist-get item :local_copy) "missing")
                    "(not in your copy of the documents"
                  "(your copy of this file differs from the indexed one")
                "; the passage as the team index holds it)\n\n")
        (insert (if (stringp text) text "") "\n")
        (goto-char (point-min)))
      (special-mode))
    (pop-to-buffer buffer)
    buffer))

(defun citeline--open (item)
  "Open the place a citation or hit ITEM points at (its passage when the local
copy of its file differs from the indexed one)."
  (if (citeline--local-copy-differs item)
      (citeline--show-passage item)
    (let* ((file (citeline--uri-file (plist-get item :uri)))
           (range (plist-get item :range))
           (line (plist-get (plist-get range :start) :line)))
      (find-file-other-window file)
      (goto-char (point-min))
      (forward-line (or line 0)))))

(defun citeline--location (item)
  (let ((page (plist-get item :page))
        (start (plist-get item :start_line))
        (end (plist-get item :end_line)))
    (cond ((numberp page) (format "%s, page %d" (plist-get item :path) page))
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
      (insert "\n"))))

(defconst citeline--fallback-notes
  '(("unsupported" . "the model's answer was not supported by the sources; showing the documents' own sentences")
    ("timeout" . "the model took too long; showing the documents' own sentences")
    ("cancelled" . "the model was stopped; showing the documents' own sentences")
    ("context" . "the sources did not fit in the model's context; showing the documents' own sentences"))
  "Why a generative ask answered with the documents' own sentences, by `fallback'.")

(defun citeline--string (value)
  "VALUE when it is a non-empty string (JSON null arrives as :null or nil)."
  (and (stringp value) (not (string-empty-p value)) value))

(defun citeline--model-name (model)
  "MODEL's file name without its folder and .gguf, or nil."
  (when (and (stringp model) (not (string-empty-p model)))
    (let ((name (replace-regexp-in-string "\\.gguf\\'" "" (file-name-nondirectory model) nil nil)))
      (unless (string-empty-p name) name))))

(defun citeline-answer-label (answer &optional model)
  "The label saying how ANSWER was made; nil for a refusal.
MODEL names the generation model (`citeline/status' models.generation)."
  (let ((mode (plist-get answer :mode))
        (reason (or (citeline--string (plist-get answer :fallback))
                    (citeline--string (plist-get answer :degraded)))))
    (cond ((eq (plist-get answer :refused) t) nil)
          ((equal mode "generative")
           (format "Written by %s, checked against sources"
                   (or (citeline--model-name model) "the model")))
          ((equal mode "extractive")
           (if reason
               (concat "Quoted from your documents · "
                       (or (cdr (assoc reason citeline--fallback-notes))
                           (format "the model's answer was not used (%s); showing the documents' own sentences" reason)))
             "Quoted from your documents")))))

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
  "Show QUESTION in the *citeline* buffer with streamed TEXT, or the final ANSWER."
  (with-current-buffer (get-buffer-create "*citeline*")
    (let ((inhibit-read-only t))
      (erase-buffer)
      (insert (propertize question 'face 'bold) "\n\n")
      (if (null answer)
          (insert (if (and text (not (string-empty-p text))) text "Searching the documents…") "\n")
        (let* ((citations (plist-get answer :citations))
               (model (plist-get (plist-get citeline-last-status :models) :generation))
               (label (citeline-answer-label answer model)))
          (when label
            (insert (propertize label 'face 'italic) "\n\n"))
          (let ((start (point)))
            ;; The final text replaces whatever streamed.
            (insert (plist-get answer :answer) "\n")
            (citeline--button-markers start (point) citations))
          (when (> (length citations) 0)
            (insert "\nSources:\n")
            (citeline--insert-items citations))))
      (goto-char (point-min))
      (special-mode))
    (display-buffer (current-buffer))
    (current-buffer)))

;;;###autoload
(defun citeline-ask (question &optional callback)
  "Ask QUESTION of the documents; the answer streams into the *citeline* buffer.
When the request completes, the buffer shows the final answer (it replaces the
streamed text) under a label saying how it was made, and its citations.  Sets
`citeline-last-answer' (or `citeline-last-error') and calls CALLBACK, if given,
with the answer.  Returns the request's token."
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
                   (citeline--show question nil answer)
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

;;;###autoload
(defun citeline-status ()
  "Show the state of the documents folders."
  (interactive)
  (let ((status (citeline--request :citeline/status eglot--{})))
    (message "%s"
             (mapconcat
              (lambda (folder)
                (concat
                 (format "%s: %s, %d files, %d chunks, %d pending"
                         (citeline--uri-file (plist-get folder :uri))
                         (plist-get folder :state) (plist-get folder :files)
                         (plist-get folder :chunks) (plist-get folder :pending))
                 (if (stringp (plist-get folder :collection))
                     (format "; team index %s, generation %s, updated %s"
                             (plist-get folder :collection) (plist-get folder :generation)
                             (or (plist-get folder :last_update) "never"))
                   "")
                 (if (stringp (plist-get folder :message))
                     (format " (%s)" (plist-get folder :message))
                   "")))
              (plist-get status :folders) "\n"))
    status))

(provide 'citeline)
;;; citeline.el ends here
